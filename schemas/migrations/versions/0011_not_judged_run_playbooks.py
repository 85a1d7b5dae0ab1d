"""document_profiles.not_judged: why a document reviewed under the contract profile is judged neither for
missing clauses nor by the playbook (no agreement, an exhibit or SEC form that is no commercial agreement, a
partial copy; NULL for an agreement); run_playbooks: the playbook each run applied, as validated, which the
report evaluates again on every read with the decisions made since

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-07 00:10:00
"""

from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op


# revision identifiers, used by Alembic.
revision: str = '0011'
down_revision: Union[str, Sequence[str], None] = '0010'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    with op.batch_alter_table('document_profiles', schema=None) as batch_op:
        batch_op.add_column(sa.Column('not_judged', sa.Text(), nullable=True))
    op.create_table('run_playbooks',
    sa.Column('run_id', sa.String(length=36), nullable=False),
    sa.Column('name', sa.String(), nullable=False),
    sa.Column('source', sa.Text(), nullable=True),
    sa.Column('definition', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('run_id'),
    if_not_exists=True
    )


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_table('run_playbooks')
    with op.batch_alter_table('document_profiles', schema=None) as batch_op:
        batch_op.drop_column('not_judged')
