"""extraction backoff: documents whose text extraction timed out wait before the next attempt (tasks/ingest/backoff.py)

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 14:00:00.000000
"""

from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op


# revision identifiers, used by Alembic.
revision: str = '0004'
down_revision: Union[str, Sequence[str], None] = '0003'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('extraction_backoff',
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('timeouts', sa.Integer(), nullable=False),
    sa.Column('last_reason', sa.Text(), nullable=False),
    sa.Column('last_failed_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('retry_after', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('sha256'),
    if_not_exists=True
    )


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_table('extraction_backoff')
