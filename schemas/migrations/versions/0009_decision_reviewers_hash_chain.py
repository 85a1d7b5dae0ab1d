"""reviewer decisions: who decided (reviewer), reclassify (category), a hash chain (prev_hash, row_hash),
append-only; reviewer accounts for the report server

Existing decisions are kept: a note the report server wrote as ``by NAME`` or ``by NAME: note`` gives
the reviewer NAME and the note after the colon; every other note is kept as it was, with no reviewer.
The rows are then chained in id order. Triggers refuse UPDATE and DELETE on reviewer_decisions.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-04 15:38:06.949724
"""

import hashlib
import json
import re
from datetime import UTC, datetime
from typing import Any, Sequence, Union

import sqlalchemy as sa
from alembic import op

# The triggers are defined once, with `docreview db upgrade` (which re-creates them when missing).
from schemas.migrations.append_only import drop_append_only, install_append_only


# revision identifiers, used by Alembic.
revision: str = '0009'
down_revision: Union[str, Sequence[str], None] = '0008'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

# Frozen copies of schemas.decisions (GENESIS, CHAIN_VERSION, decision_hash, parse_legacy_note) as
# they were when this revision was written: a revision must not change with later code.
_GENESIS = "0" * 64
_BY = re.compile(r"^by ([^\n:]{1,80}?)(?:: (.*))?$", re.S)

def _time(at: datetime) -> str:
    at = at.astimezone(UTC) if at.tzinfo is not None else at.replace(tzinfo=UTC)
    return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _hash(kind: str, key: str, seq: int, decision: str, category: Any, reviewer: Any, note: Any, at: datetime,
          prev: str) -> str:
    content = {
        "v": "docreview-decision-v1",
        "target_kind": kind,
        "target_key": key,
        "seq": int(seq),
        "decision": decision,
        "category": category,
        "reviewer": reviewer,
        "note": note,
        "decided_at": _time(at),
        "prev_hash": prev,
    }
    raw = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def _legacy(note: Any) -> tuple[Any, Any]:
    if not note:
        return None, note
    m = _BY.match(note.strip())
    if m is None:
        return None, note
    name = " ".join(m.group(1).split())
    rest = (m.group(2) or "").strip() or None
    return (name or None), (rest if name else note)


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('reviewer_accounts',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=80), nullable=False),
    sa.Column('name_key', sa.String(length=80), nullable=False),
    sa.Column('password_hash', sa.Text(), nullable=False),
    sa.Column('disabled', sa.Boolean(), nullable=False),
    sa.Column('failed_logins', sa.Integer(), nullable=False),
    sa.Column('locked_until', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_login_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    if_not_exists=True
    )
    with op.batch_alter_table('reviewer_accounts', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_reviewer_accounts_name_key'), ['name_key'], unique=True, if_not_exists=True)

    with op.batch_alter_table('reviewer_decisions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('reviewer', sa.String(length=80), nullable=True))
        batch_op.add_column(sa.Column('category', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('prev_hash', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('row_hash', sa.String(length=64), nullable=True))

    conn = op.get_bind()
    table = sa.table(
        'reviewer_decisions',
        sa.column('id', sa.Integer()),
        sa.column('target_kind', sa.String()),
        sa.column('target_key', sa.String()),
        sa.column('seq', sa.Integer()),
        sa.column('decision', sa.String()),
        sa.column('note', sa.Text()),
        sa.column('decided_at', sa.DateTime(timezone=True)),
        sa.column('reviewer', sa.String()),
        sa.column('category', sa.String()),
        sa.column('prev_hash', sa.String()),
        sa.column('row_hash', sa.String()),
    )
    rows = conn.execute(sa.select(table).order_by(table.c.id)).mappings().all()
    prev = _GENESIS
    for row in rows:
        reviewer, note = _legacy(row['note'])
        digest = _hash(row['target_kind'], row['target_key'], row['seq'], row['decision'], None, reviewer, note,
                       row['decided_at'], prev)
        conn.execute(
            table.update().where(table.c.id == row['id']).values(reviewer=reviewer, note=note, prev_hash=prev,
                                                                  row_hash=digest)
        )
        prev = digest

    with op.batch_alter_table('reviewer_decisions', schema=None) as batch_op:
        batch_op.alter_column('prev_hash', existing_type=sa.String(length=64), nullable=False)
        batch_op.alter_column('row_hash', existing_type=sa.String(length=64), nullable=False)
        batch_op.create_unique_constraint('uq_reviewer_decisions_prev_hash', ['prev_hash'])

    install_append_only(conn)


def downgrade() -> None:
    """Downgrade schema: the reviewer goes back into the note (``by NAME: note``); hashes and the
    reclassify category are dropped (a reclassification stays as a decision named ``reclassify``)."""
    conn = op.get_bind()
    drop_append_only(conn)
    table = sa.table('reviewer_decisions', sa.column('id', sa.Integer()), sa.column('note', sa.Text()),
                     sa.column('reviewer', sa.String()), sa.column('category', sa.String()))
    for row in conn.execute(sa.select(table).where(table.c.reviewer.is_not(None))).mappings().all():
        note = f"by {row['reviewer']}: {row['note']}" if row['note'] else f"by {row['reviewer']}"
        conn.execute(table.update().where(table.c.id == row['id']).values(note=note))
    with op.batch_alter_table('reviewer_decisions', schema=None) as batch_op:
        batch_op.drop_constraint('uq_reviewer_decisions_prev_hash', type_='unique')
        batch_op.drop_column('row_hash')
        batch_op.drop_column('prev_hash')
        batch_op.drop_column('category')
        batch_op.drop_column('reviewer')

    with op.batch_alter_table('reviewer_accounts', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_reviewer_accounts_name_key'))

    op.drop_table('reviewer_accounts')
