"""The append-only guard on ``reviewer_decisions``: database triggers that refuse ``UPDATE`` and
``DELETE`` (SQLite: ``reviewer_decisions_no_update`` and ``reviewer_decisions_no_delete``;
PostgreSQL: ``reviewer_decisions_append_only`` calling ``docreview_decisions_append_only()``).

One definition, used by revision 0009 (which installs them) and by ``docreview db upgrade`` (which
re-creates them on a database that lost them, :mod:`cli.db`). Revision 0009 runs these statements as
they are: changing what they do needs a new revision, not an edit here.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import Connection

#: The error message every refused UPDATE or DELETE raises.
APPEND_ONLY_ERROR = "reviewer_decisions is append-only"

SQLITE_CREATE = (
    "CREATE TRIGGER IF NOT EXISTS reviewer_decisions_no_update BEFORE UPDATE ON reviewer_decisions "
    f"BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY_ERROR}'); END",
    "CREATE TRIGGER IF NOT EXISTS reviewer_decisions_no_delete BEFORE DELETE ON reviewer_decisions "
    f"BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY_ERROR}'); END",
)
SQLITE_DROP = (
    "DROP TRIGGER IF EXISTS reviewer_decisions_no_update",
    "DROP TRIGGER IF EXISTS reviewer_decisions_no_delete",
)
PG_CREATE = (
    "CREATE OR REPLACE FUNCTION docreview_decisions_append_only() RETURNS trigger AS $$ "
    f"BEGIN RAISE EXCEPTION '{APPEND_ONLY_ERROR}'; END $$ LANGUAGE plpgsql",
    "DROP TRIGGER IF EXISTS reviewer_decisions_append_only ON reviewer_decisions",
    "CREATE TRIGGER reviewer_decisions_append_only BEFORE UPDATE OR DELETE ON reviewer_decisions "
    "FOR EACH ROW EXECUTE FUNCTION docreview_decisions_append_only()",
)
PG_DROP = (
    "DROP TRIGGER IF EXISTS reviewer_decisions_append_only ON reviewer_decisions",
    "DROP FUNCTION IF EXISTS docreview_decisions_append_only()",
)


def install_append_only(conn: Connection) -> bool:
    """(Re-)create the triggers on ``conn``'s database, in its transaction; idempotent. False for a
    dialect other than SQLite and PostgreSQL (nothing is installed there)."""
    statements = {"sqlite": SQLITE_CREATE, "postgresql": PG_CREATE}.get(conn.dialect.name)
    for statement in statements or ():
        conn.execute(text(statement))
    return statements is not None


def drop_append_only(conn: Connection) -> None:
    """Drop the triggers (and PostgreSQL's function), if there (revision 0009's downgrade)."""
    for statement in {"sqlite": SQLITE_DROP, "postgresql": PG_DROP}.get(conn.dialect.name, ()):
        conn.execute(text(statement))
