"""The same pipeline code on PostgreSQL (the real server on 127.0.0.1:5432)."""

from __future__ import annotations

import json
import uuid

import pytest
from sqlalchemy import create_engine, func, text
from sqlmodel import Session, select

from schemas.tables import ChunkRow, FindingRow, RunDocumentRow
from tasks.persist import dispose_engines, get_engine
from tasks.samples import generate_samples

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


@pytest.fixture
def pg_url():
    """A fresh, uniquely named PostgreSQL database, dropped afterwards."""
    name = f"docreview_test_{uuid.uuid4().hex[:10]}"
    try:
        admin = create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"PostgreSQL not reachable at 127.0.0.1:5432: {exc}")
    yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    dispose_engines()
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def test_review_on_postgres_is_idempotent(tmp_path, pg_url):
    from flows.review import review_documents

    inbox = tmp_path / "inbox"
    generate_samples(inbox, count=2)
    review_documents(source=str(inbox), out_dir=str(tmp_path / "a"), database_url=pg_url, backend="rules")
    with Session(get_engine(pg_url)) as s:
        findings = s.exec(select(func.count()).select_from(FindingRow)).one()
        chunks = s.exec(select(func.count()).select_from(ChunkRow)).one()
        law_values = s.exec(select(FindingRow.values).where(FindingRow.clause_type == "governing_law")).all()
    assert findings > 0 and chunks > 0
    assert law_values and all(isinstance(v, dict) for v in law_values)  # JSON column round-trips
    assert any(v.get("jurisdiction") for v in law_values)
    review_documents(source=str(inbox), out_dir=str(tmp_path / "b"), database_url=pg_url, backend="rules")
    with Session(get_engine(pg_url)) as s:
        assert s.exec(select(func.count()).select_from(FindingRow)).one() == findings
        assert s.exec(select(func.count()).select_from(ChunkRow)).one() == chunks
        assert s.exec(select(func.count()).select_from(RunDocumentRow)).one() == 4  # 2 objects x 2 runs
    report = json.loads((tmp_path / "b" / "report.json").read_text())
    assert report["run"]["metrics"]["documents_skipped"] == 2
