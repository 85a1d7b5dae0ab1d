"""playbook results: each playbook rule's outcome per document and run (tasks/check/playbook.py)

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 17:00:00.000000
"""

from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op


# revision identifiers, used by Alembic.
revision: str = '0006'
down_revision: Union[str, Sequence[str], None] = '0005'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('playbook_results',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.String(length=36), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('file_name', sa.String(), nullable=False),
    sa.Column('playbook', sa.String(), nullable=False),
    sa.Column('rule_id', sa.String(length=80), nullable=False),
    sa.Column('clause_type', sa.String(), nullable=False),
    sa.Column('expect', sa.String(), nullable=False),
    sa.Column('status', sa.String(), nullable=False),
    sa.Column('severity', sa.String(), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('finding_ids', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('run_id', 'sha256', 'rule_id', name='uq_playbook_results_key'),
    if_not_exists=True
    )
    with op.batch_alter_table('playbook_results', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_playbook_results_run_id'), ['run_id'], unique=False, if_not_exists=True)
        batch_op.create_index(batch_op.f('ix_playbook_results_sha256'), ['sha256'], unique=False, if_not_exists=True)
        batch_op.create_index(batch_op.f('ix_playbook_results_status'), ['status'], unique=False, if_not_exists=True)


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('playbook_results', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_playbook_results_status'))
        batch_op.drop_index(batch_op.f('ix_playbook_results_sha256'))
        batch_op.drop_index(batch_op.f('ix_playbook_results_run_id'))
    op.drop_table('playbook_results')
