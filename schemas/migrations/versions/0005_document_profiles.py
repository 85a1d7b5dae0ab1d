"""document profiles: contract or filing, the filing's form and summary, and its changes since the previous filing

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 17:30:00.000000
"""

from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op


# revision identifiers, used by Alembic.
revision: str = '0005'
down_revision: Union[str, Sequence[str], None] = '0004'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('document_profiles',
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('profile', sa.String(length=16), nullable=False),
    sa.Column('document_type', sa.String(length=32), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('company', sa.Text(), nullable=True),
    sa.Column('company_key', sa.String(length=200), nullable=False),
    sa.Column('period', sa.String(length=10), nullable=True),
    sa.Column('summary', sa.JSON(), nullable=False),
    sa.Column('previous_sha256', sa.String(length=64), nullable=True),
    sa.Column('changes', sa.JSON(), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('sha256'),
    if_not_exists=True
    )
    with op.batch_alter_table('document_profiles', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_document_profiles_company_key'), ['company_key'], unique=False,
                              if_not_exists=True)


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('document_profiles', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_document_profiles_company_key'))
    op.drop_table('document_profiles')
