"""document kinds: the detected format and structure (locators, tracked changes, comments) of a document,
and the locator of each finding

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02 23:00:00.000000
"""

from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op


# revision identifiers, used by Alembic.
revision: str = '0008'
down_revision: Union[str, Sequence[str], None] = '0007'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    with op.batch_alter_table('documents') as batch:
        batch.add_column(sa.Column('kind', sa.String(), nullable=True))
        batch.add_column(sa.Column('structure', sa.JSON(), nullable=True))
    with op.batch_alter_table('findings') as batch:
        batch.add_column(sa.Column('locator', sa.Text(), nullable=True))


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('findings') as batch:
        batch.drop_column('locator')
    with op.batch_alter_table('documents') as batch:
        batch.drop_column('structure')
        batch.drop_column('kind')
