"""Alembic migrations: new, concurrent and pre-migration databases, on SQLite and PostgreSQL.

``test_tables_match_the_revisions`` is ``alembic check``: a table or column added to
schemas/tables.py without a revision fails it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import (
    Column,
    Integer,
    MetaData,
    String,
    Table,
    UniqueConstraint,
    create_engine,
    func,
    inspect,
    select,
    text,
)
from sqlalchemy.pool import NullPool
from sqlmodel import SQLModel

from schemas.migrations import (
    SchemaDriftError,
    check_migrations,
    current_revision,
    head_revision,
    new_revision,
    schema_diff,
    upgrade_database,
)
from schemas.tables import RunRow, utcnow
from tasks.store.persist import dispose_engines, get_engine

ROOT = Path(__file__).resolve().parents[1]

#: Tables that came after the baseline revision (0001); a pre-migration database lacks them.
NEWER_THAN_BASELINE = {
    "document_claims",
    "source_objects",
    "watched_objects",
    "extraction_backoff",
    "reviewer_accounts",
    "document_versions",
    "run_playbooks",
}
#: Columns of reviewer_decisions that came with revision 0009 (the reviewer and the hash chain).
DECISION_CHAIN_COLUMNS = {"reviewer", "category", "prev_hash", "row_hash"}


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def new_db(request, tmp_path) -> str:
    """URL of a new, empty database of each dialect."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'new.db'}"
    return request.getfixturevalue("pg_database")("docreview_mig")


@pytest.fixture(autouse=True)
def _dispose():
    yield
    dispose_engines()


def _version_rows(url: str) -> list[str]:
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            return [r[0] for r in conn.execute(text("SELECT version_num FROM alembic_version"))]
    finally:
        engine.dispose()


def test_opening_a_new_database_migrates_it_to_head(new_db):
    engine = get_engine(new_db)
    assert current_revision(engine) == head_revision()
    assert _version_rows(new_db) == [head_revision()]
    tables = set(inspect(engine).get_table_names())
    assert set(SQLModel.metadata.tables) <= tables
    with engine.begin() as conn:  # tables are usable: the run row round-trips with its timezone
        conn.execute(
            RunRow.__table__.insert().values(
                id="r1",
                source="s",
                backend="rules",
                model="m",
                prompt_version="p",
                started_at=utcnow(),
                status="running",
            )
        )
        assert conn.execute(select(func.count()).select_from(RunRow.__table__)).scalar_one() == 1


def test_tables_match_the_revisions(new_db):
    """``alembic check``: autogenerate finds nothing between the revisions and schemas/tables.py."""
    engine = create_engine(new_db, poolclass=NullPool)
    try:
        check_migrations(engine)  # raises SchemaDriftError listing the differences
        assert schema_diff(engine) == []
    finally:
        engine.dispose()


def test_a_table_or_column_without_a_revision_is_reported(tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path / 'drift.db'}", poolclass=NullPool)
    upgrade_database(engine)
    metadata = MetaData()
    for table in SQLModel.metadata.tables.values():
        table.to_metadata(metadata)
    Table("probe_unmigrated", metadata, Column("id", Integer, primary_key=True))
    metadata.tables["runs"].append_column(Column("probe_note", String(20), nullable=True))
    diff = schema_diff(engine, metadata)
    kinds = {(d[0], d[1].name) if d[0] == "add_table" else (d[0], d[2], d[3].name) for d in diff}
    assert kinds == {("add_table", "probe_unmigrated"), ("add_column", "runs", "probe_note")}

    probe = Table("probe_unmigrated", SQLModel.metadata, Column("id", Integer, primary_key=True))
    try:  # the check the suite and `docreview db check` run sees a table added to the models
        with pytest.raises(SchemaDriftError, match="probe_unmigrated"):
            check_migrations(engine)
    finally:
        SQLModel.metadata.remove(probe)
        engine.dispose()


def test_new_revision_refuses_when_nothing_changed():
    with pytest.raises(ValueError, match="nothing to migrate"):
        new_revision("no change")


def _create_pre_migration_database(url: str) -> None:
    """What docreview's create_all made before migrations: the baseline tables, without the
    chunk routing columns (added to existing databases by hand back then), with some data."""
    metadata = MetaData()
    for name, table in SQLModel.metadata.tables.items():
        if name == "reviewer_decisions":  # as the baseline made it: no reviewer, no chain (revision 0009)
            Table(
                name,
                metadata,
                *[c._copy() for c in table.columns if c.name not in DECISION_CHAIN_COLUMNS],
                UniqueConstraint("target_key", "seq", name="uq_reviewer_decisions_key"),
            )
        elif name not in NEWER_THAN_BASELINE:
            table.to_metadata(metadata)
    engine = create_engine(url, poolclass=NullPool)
    try:
        metadata.create_all(engine)
        with engine.begin() as conn:
            conn.execute(text("ALTER TABLE chunks DROP COLUMN route_ranges"))  # revision 0003
            conn.execute(text("ALTER TABLE chunks DROP COLUMN route_reason"))
            conn.execute(text("ALTER TABLE chunks DROP COLUMN route"))
            conn.execute(text("ALTER TABLE documents DROP COLUMN kind"))  # revision 0008
            conn.execute(text("ALTER TABLE documents DROP COLUMN structure"))
            conn.execute(text("ALTER TABLE findings DROP COLUMN locator"))
            conn.execute(text("ALTER TABLE document_profiles DROP COLUMN amendment"))  # revision 0010
            conn.execute(text("ALTER TABLE document_profiles DROP COLUMN not_judged"))  # revision 0011
            conn.execute(
                metadata.tables["runs"]
                .insert()
                .values(
                    id="old-run",
                    source="inbox",
                    backend="rules",
                    model="rules-v1",
                    prompt_version="p1",
                    started_at=utcnow(),
                    status="completed",
                )
            )
        assert "alembic_version" not in inspect(engine).get_table_names()
    finally:
        engine.dispose()


def test_a_database_made_before_migrations_is_adopted(new_db):
    _create_pre_migration_database(new_db)
    engine = get_engine(new_db)
    assert _version_rows(new_db) == [head_revision()]
    assert schema_diff(engine) == []  # missing tables and the routing columns were added
    columns = {c["name"] for c in inspect(engine).get_columns("chunks")}
    assert {"route", "route_reason"} <= columns
    with engine.connect() as conn:  # nothing was lost
        assert conn.execute(text("SELECT source FROM runs WHERE id = 'old-run'")).scalar_one() == "inbox"


_RACER = """
import os, sys, time
from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool
from schemas.migrations import upgrade_database
url, go = sys.argv[1], sys.argv[2]
engine = create_engine(url, poolclass=NullPool)
print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.002)
print(upgrade_database(engine), flush=True)
engine.dispose()
"""


@pytest.mark.parametrize("adopt", [False, True], ids=["new", "pre-migration"])
def test_processes_opening_the_same_database_at_once_migrate_it_once(new_db, adopt, tmp_path):
    """Three processes upgrade one database at the same instant: all succeed, one version row."""
    if adopt:
        _create_pre_migration_database(new_db)
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, new_db, str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(3)
    ]
    try:
        assert [p.stdout.readline().strip() for p in procs] == ["ready"] * 3  # all imported, engines made
        go.touch()  # start together
        results = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [p.returncode for p in procs] == [0, 0, 0], [err[-1500:] for _, err in results]
    assert {out.strip() for out, _ in results} == {head_revision()}
    assert _version_rows(new_db) == [head_revision()]
    engine = create_engine(new_db, poolclass=NullPool)
    try:
        assert schema_diff(engine) == []
    finally:
        engine.dispose()


def test_db_commands(tmp_path):
    from typer.testing import CliRunner

    from cli.app import app

    url = f"sqlite:///{tmp_path / 'cli.db'}"
    runner = CliRunner()
    missing = runner.invoke(app, ["db", "current", "--db", url])
    assert missing.exit_code == 2 and "no database at" in missing.output and not (tmp_path / "cli.db").exists()
    upgraded = runner.invoke(app, ["db", "upgrade", "--db", url])
    assert upgraded.exit_code == 0 and f"no revision → {head_revision()}" in upgraded.output
    current = runner.invoke(app, ["db", "current", "--db", url])
    assert current.exit_code == 0 and f"{head_revision()} (newest: {head_revision()})" in current.output
    checked = runner.invoke(app, ["db", "check", "--db", url])
    assert checked.exit_code == 0 and "match" in checked.output
    nothing = runner.invoke(app, ["db", "revision", "-m", "nothing"])
    assert nothing.exit_code == 2 and "nothing to migrate" in nothing.output


def _refuses_changing_decisions(url: str) -> None:
    """One decision goes in; an UPDATE and a DELETE of it are refused by the database."""
    from sqlalchemy.exc import DatabaseError

    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO reviewer_decisions (target_kind, target_key, seq, decision, decided_at, prev_hash, "
                    "row_hash) VALUES ('finding', :key, 1, 'approve', :at, :prev, :row)"
                ),
                {"key": "a" * 64, "at": utcnow(), "prev": "0" * 64, "row": "1" * 64},
            )
        for statement in ("UPDATE reviewer_decisions SET decision = 'reject'", "DELETE FROM reviewer_decisions"):
            with pytest.raises(DatabaseError, match="reviewer_decisions is append-only"), engine.begin() as conn:
                conn.execute(text(statement))
        with engine.connect() as conn:
            assert conn.execute(text("SELECT decision FROM reviewer_decisions")).scalars().all() == ["approve"]
    finally:
        engine.dispose()


def _guard(url: str) -> bool | None:
    from sqlmodel import Session

    from cli.audit import append_only_guard

    engine = create_engine(url, poolclass=NullPool)
    try:
        with Session(engine) as session:
            return append_only_guard(session)
    finally:
        engine.dispose()


def test_a_database_upgraded_step_by_step_from_the_oldest_revision_refuses_changing_decisions(tmp_path):
    from alembic import command
    from alembic.script import ScriptDirectory

    from schemas.migrations import alembic_config

    url = f"sqlite:///{tmp_path / 'steps.db'}"
    steps = [r.revision for r in ScriptDirectory.from_config(alembic_config()).walk_revisions()][::-1]
    assert steps[0] == "0001" and steps[-1] == head_revision()
    for step in steps:  # one revision at a time, each in its own process-like session
        command.upgrade(alembic_config(url), step)
        assert _version_rows(url) == [step]
    assert _guard(url) is True
    _refuses_changing_decisions(url)


@pytest.mark.parametrize("dialect", ["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def test_db_upgrade_gives_back_dropped_append_only_triggers(tmp_path, dialect, request):
    from typer.testing import CliRunner

    from cli.app import app

    url = f"sqlite:///{tmp_path / 'head.db'}" if dialect == "sqlite" else request.getfixturevalue("pg_database")()
    runner = CliRunner()
    first = runner.invoke(app, ["db", "upgrade", "--db", url])
    assert first.exit_code == 0 and "append-only" not in first.output, first.output  # made by the revisions
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.begin() as conn:  # someone with the database's credentials drops them
            if dialect == "sqlite":
                conn.execute(text("DROP TRIGGER reviewer_decisions_no_update"))
                conn.execute(text("DROP TRIGGER reviewer_decisions_no_delete"))
            else:
                conn.execute(text("DROP TRIGGER reviewer_decisions_append_only ON reviewer_decisions"))
    finally:
        engine.dispose()
    assert _guard(url) is False
    again = runner.invoke(app, ["db", "upgrade", "--db", url])
    assert again.exit_code == 0, again.output
    assert f"{head_revision()} → {head_revision()}" in again.output
    assert "re-created the append-only triggers on reviewer_decisions" in again.output
    assert _guard(url) is True
    _refuses_changing_decisions(url)
    third = runner.invoke(app, ["db", "upgrade", "--db", url])  # idempotent: nothing more to say
    assert third.exit_code == 0 and "append-only" not in third.output, third.output
