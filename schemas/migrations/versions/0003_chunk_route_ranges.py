"""chunk route ranges: the document ranges a chunk sends to review (tasks/review/route.py)

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29 19:30:39.262381
"""

from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op


# revision identifiers, used by Alembic.
revision: str = '0003'
down_revision: Union[str, Sequence[str], None] = '0002'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema (skipped where the column exists: a database an earlier build made whole)."""
    if 'route_ranges' in {c['name'] for c in sa.inspect(op.get_bind()).get_columns('chunks')}:
        return
    with op.batch_alter_table('chunks', schema=None) as batch_op:
        batch_op.add_column(sa.Column('route_ranges', sa.Text(), nullable=True))


def downgrade() -> None:
    """Downgrade schema."""
    with op.batch_alter_table('chunks', schema=None) as batch_op:
        batch_op.drop_column('route_ranges')
