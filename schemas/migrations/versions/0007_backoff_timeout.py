"""extraction back-off: the extraction timeout the document timed out under (a raised limit ends the wait)

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02 03:15:00.000000
"""

from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op


# revision identifiers, used by Alembic.
revision: str = '0007'
down_revision: Union[str, Sequence[str], None] = '0006'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    with op.batch_alter_table('extraction_backoff') as batch:
        batch.add_column(sa.Column('timeout_s', sa.Float(), nullable=True))


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('extraction_backoff') as batch:
        batch.drop_column('timeout_s')
