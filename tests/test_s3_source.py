"""S3 source against a real HTTP S3 endpoint (moto in server mode): listing, pagination, hostile
keys, size limit, conditional downloads, the review flow end to end on CUAD contracts, errors."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import uuid
from pathlib import Path

import pytest
from sqlalchemy import func
from sqlmodel import Session, select

from schemas.documents import FailureKind
from schemas.settings import Limits
from schemas.tables import FindingRow, RunDocumentRow, SourceObjectRow
from tasks.ingest.local import SourceError
from tasks.ingest.s3 import (
    DOWNLOAD_DIR_PREFIX,
    display_name,
    download_name,
    fetch_s3_object,
    list_s3_source,
    parse_s3_uri,
    remove_downloads,
    s3_client,
)
from tasks.store.persist import dispose_engines, get_engine

pytestmark = pytest.mark.integration

HOSTILE_KEYS = [
    "in/../../../../etc/passwd.pdf",
    "in/./dot.pdf",
    "in/ctl\x01\x1b[31mred\x7f.pdf",
    "in/nul\x00byte.pdf",
    "in/\u202eevil\u202cfdp.pdf",
    "in/ünï©ødé 文件.pdf",
    "in/" + "x" * 1000 + ".pdf",
    "in/back\\slash\\..\\..\\up.pdf",
    "in//double-slash.pdf",
]


@pytest.fixture(autouse=True)
def _aws(aws_env):
    """Every test here runs with dummy AWS credentials (conftest ``aws_env``)."""


@pytest.fixture
def bucket(s3_url):
    """A fresh, empty bucket: ``(name, boto3 client)``."""
    name = f"test-{uuid.uuid4().hex[:12]}"
    client = s3_client(s3_url)
    client.create_bucket(Bucket=name)
    return name, client


def count_calls(client, operation: str) -> list[int]:
    """Count successful calls of ``operation`` made through ``client`` (botocore event hook)."""
    calls = [0]

    def hook(**_kwargs):
        calls[0] += 1

    client.meta.events.register(f"after-call.s3.{operation}", hook)
    return calls


def download_dirs() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).iterdir() if p.name.startswith(DOWNLOAD_DIR_PREFIX)}


@pytest.fixture
def private_tmp(tmp_path, monkeypatch) -> Path:
    """This test's own temporary folder as ``tempfile.gettempdir()`` (others share /tmp)."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def test_uri_parsing_and_safe_names():
    assert parse_s3_uri("s3://my-bucket/a/b.pdf") == ("my-bucket", "a/b.pdf")
    assert parse_s3_uri("s3://my-bucket") == ("my-bucket", "")
    for bad in ("s3:///key", "s3://a/x", "s3://bad..name/x", "http://bucket/x", "s3://-bucket/x"):
        with pytest.raises(SourceError):
            parse_s3_uri(bad)
    assert display_name("a/b/\x1b[31mred\u202e.pdf") == "?[31mred?.pdf"
    assert len(display_name("a/" + "y" * 1000)) == 200
    name = download_name("s3://b/../../etc/passwd")
    assert name.endswith(".obj") and "/" not in name and ".." not in name and len(name) == 68


def test_listing_paginates_filters_and_keeps_sizes_and_etags(bucket, s3_url):
    name, client = bucket
    keys = [f"docs/c{i:02d}.pdf" for i in range(7)] + [
        "docs/sub/deep.PDF",
        "docs/notes.txt",
        "docs/.trash/x.pdf",
        "docs/folder/",
        "docs-other/y.pdf",
        "top.pdf",
    ]
    etags = {}
    for i, key in enumerate(keys):
        etags[key] = client.put_object(Bucket=name, Key=key, Body=b"%PDF-1.4 " + bytes([65 + i]) * i)["ETag"].strip('"')
    pages = count_calls(client, "ListObjectsV2")
    objs = list_s3_source(f"s3://{name}/docs", endpoint_url=s3_url, page_size=2)
    expected = sorted([f"docs/c{i:02d}.pdf" for i in range(7)] + ["docs/sub/deep.PDF"])
    assert [o.uri for o in objs] == [f"s3://{name}/{k}" for k in expected]
    assert pages[0] >= 5  # 1 exact-key probe + ceil(10 listed keys / 2) pages
    for obj in objs:
        key = obj.uri.split("/", 3)[3]
        assert obj.etag == etags[key] and obj.size_bytes == 9 + keys.index(key)
        assert obj.endpoint_url == s3_url and not Path(obj.local_path).exists()
    remove_downloads(objs)
    # suffix "" keeps every non-hidden key; a trailing slash and the bucket root work too
    everything = list_s3_source(f"s3://{name}/docs/", endpoint_url=s3_url, suffix="")
    assert f"s3://{name}/docs/notes.txt" in [o.uri for o in everything] and len(everything) == 9
    root = list_s3_source(f"s3://{name}", endpoint_url=s3_url)
    assert f"s3://{name}/top.pdf" in [o.uri for o in root] and f"s3://{name}/docs-other/y.pdf" in [o.uri for o in root]
    remove_downloads(everything + root)


def test_exact_key_is_one_object_whatever_its_suffix(bucket, s3_url):
    name, client = bucket
    for key in ("a/report.pdf", "a/report.pdf.bak", "a/report.pdf/inner.pdf", "a/readme.txt"):
        client.put_object(Bucket=name, Key=key, Body=b"%PDF-1.4")
    assert [o.uri for o in list_s3_source(f"s3://{name}/a/report.pdf", endpoint_url=s3_url)] == [
        f"s3://{name}/a/report.pdf"
    ]
    assert [o.uri for o in list_s3_source(f"s3://{name}/a/readme.txt", endpoint_url=s3_url)] == [
        f"s3://{name}/a/readme.txt"
    ]
    assert list_s3_source(f"s3://{name}/a/missing.pdf", endpoint_url=s3_url) == []


def test_endpoint_from_docreview_environment(bucket, s3_url, monkeypatch):
    name, client = bucket
    client.put_object(Bucket=name, Key="e/x.pdf", Body=b"%PDF-1.4")
    monkeypatch.setenv("DOCREVIEW_S3_ENDPOINT_URL", s3_url)
    objs = list_s3_source(f"s3://{name}/e")
    assert [o.uri for o in objs] == [f"s3://{name}/e/x.pdf"] and objs[0].endpoint_url == s3_url
    remove_downloads(objs)


def test_hostile_keys_download_inside_the_run_folder(bucket, s3_url, private_tmp):
    name, client = bucket
    bodies = {}
    for i, key in enumerate(HOSTILE_KEYS):
        bodies[key] = b"%PDF-1.4\n" + f"object {i}".encode() + os.urandom(64)
        client.put_object(Bucket=name, Key=key, Body=bodies[key])
    before = set(private_tmp.iterdir())
    objs = list_s3_source(f"s3://{name}/in", endpoint_url=s3_url)
    assert sorted(o.uri for o in objs) == sorted(f"s3://{name}/{k}" for k in HOSTILE_KEYS)
    folder = Path(objs[0].local_path).parent
    assert folder.name.startswith(DOWNLOAD_DIR_PREFIX) and oct(folder.stat().st_mode & 0o777) == "0o700"
    for obj in objs:
        out = fetch_s3_object(obj, Limits())
        key = obj.uri.split("/", 3)[3]
        assert out.failure is None, out.reason
        assert out.sha256 == hashlib.sha256(bodies[key]).hexdigest()
        local = Path(out.source.local_path)
        assert local.resolve().parent == folder.resolve() and local.read_bytes() == bodies[key]
        assert "\x00" not in obj.name and "\u202e" not in obj.name and len(obj.name) <= 200
    assert len(list(folder.iterdir())) == len(HOSTILE_KEYS)  # one file each, nothing else, no .part left
    # nothing was written beside the run folder (e.g. /tmp/etc/passwd.pdf or /tmp/up.pdf)
    assert folder.parent == private_tmp and set(private_tmp.iterdir()) - before == {folder}
    remove_downloads(objs)
    assert not folder.exists()


def test_size_limit_fails_without_downloading(bucket, s3_url):
    name, client = bucket
    client.put_object(Bucket=name, Key="big/large.pdf", Body=b"%PDF-1.4" + b"0" * 5000)
    client.put_object(Bucket=name, Key="big/empty.pdf", Body=b"")
    gets = count_calls(client, "GetObject")
    objs = {o.name: o for o in list_s3_source(f"s3://{name}/big", endpoint_url=s3_url)}
    large = fetch_s3_object(objs["large.pdf"], Limits(max_file_bytes=1000))
    assert large.failure == FailureKind.too_large and large.reason.startswith("too large")
    assert "5,008 bytes" in large.reason and "not downloaded" in large.reason
    empty = fetch_s3_object(objs["empty.pdf"], Limits())
    assert empty.failure == FailureKind.empty_file
    assert gets[0] == 0 and not Path(objs["large.pdf"].local_path).exists()
    remove_downloads(list(objs.values()))


def test_changed_or_deleted_object_fails_with_a_reason(bucket, s3_url):
    name, client = bucket
    client.put_object(Bucket=name, Key="c/changed.pdf", Body=b"%PDF-1.4 first")
    client.put_object(Bucket=name, Key="c/deleted.pdf", Body=b"%PDF-1.4 gone")
    client.put_object(Bucket=name, Key="c/plain.pdf", Body=b"no header here")
    objs = {o.name: o for o in list_s3_source(f"s3://{name}/c", endpoint_url=s3_url)}
    client.put_object(Bucket=name, Key="c/changed.pdf", Body=b"%PDF-1.4 second version")
    client.delete_object(Bucket=name, Key="c/deleted.pdf")
    changed = fetch_s3_object(objs["changed.pdf"], Limits())
    assert changed.failure == FailureKind.unreadable and "changed since it was listed" in changed.reason
    deleted = fetch_s3_object(objs["deleted.pdf"], Limits())
    assert deleted.failure == FailureKind.unreadable and "does not exist" in deleted.reason
    plain = fetch_s3_object(objs["plain.pdf"], Limits())
    assert (
        plain.failure == FailureKind.unsupported_kind and plain.sha256 == hashlib.sha256(b"no header here").hexdigest()
    )
    for out in (changed, deleted):
        assert not Path(out.source.local_path).exists()
        assert not Path(out.source.local_path + ".part").exists()
    remove_downloads(list(objs.values()))


def test_listing_errors_are_source_errors(s3_url):
    with pytest.raises(SourceError, match="bucket does not exist"):
        list_s3_source("s3://no-such-bucket-here/x", endpoint_url=s3_url)
    with pytest.raises(SourceError, match="cannot reach the S3 endpoint"):
        list_s3_source("s3://any-bucket/x", endpoint_url="http://127.0.0.1:9")  # discard port: refused


def test_review_cli_reports_a_missing_bucket_without_traceback(s3_url, tmp_path, prefect_harness):
    from typer.testing import CliRunner

    from cli.app import app

    result = CliRunner().invoke(
        app,
        [
            "review",
            "s3://no-such-bucket-here/in",
            "--endpoint-url",
            s3_url,
            "--db",
            f"sqlite:///{tmp_path / 'cli.db'}",
            "--out",
            str(tmp_path / "out"),
            "--backend",
            "rules",
        ],
    )
    dispose_engines()
    assert result.exit_code == 2, result.output
    assert "cannot list s3://no-such-bucket-here/in: the bucket does not exist" in result.output
    assert "Traceback" not in result.output


@pytest.mark.usefixtures("prefect_harness")
def test_review_flow_over_a_bucket(bucket, s3_url, shared_data, tmp_path, db_url, pdf_maker, private_tmp, monkeypatch):
    """CUAD contracts, a hostile key and bad objects in a bucket: reviewed/failed like a folder,
    ETags recorded, downloads removed, re-run idempotent."""
    from flows.review import review_documents

    name, client = bucket
    pdfs = sorted((shared_data / "cuad" / "pdf").iterdir(), key=lambda p: p.stat().st_size)[:3]
    for pdf in pdfs:
        client.put_object(Bucket=name, Key=f"contracts/{pdf.name}", Body=pdf.read_bytes())
    hostile = "contracts/../../" + "é" * 300 + ".pdf"
    client.put_object(Bucket=name, Key=hostile, Body=pdfs[0].read_bytes())  # same bytes: a copy
    client.put_object(Bucket=name, Key="contracts/fake.pdf", Body=b"this is not a PDF")
    blank = pdf_maker(tmp_path / "blank.pdf", [""])
    client.put_object(Bucket=name, Key="contracts/blank.pdf", Body=blank.read_bytes())
    client.put_object(Bucket=name, Key="contracts/readme.txt", Body=b"ignored by the suffix filter")
    etags = {o["Key"]: o["ETag"].strip('"') for o in client.list_objects_v2(Bucket=name)["Contents"]}

    dirs_before = download_dirs()
    source = f"s3://{name}/contracts"
    try:
        first = review_documents(
            source=source, endpoint_url=s3_url, database_url=db_url, backend="rules", out_dir=str(tmp_path / "out1")
        )
        status = {d["file_name"]: (d["status"], d["reason"]) for d in first["documents"]}
        assert len(status) == 6, status  # readme.txt is not listed
        for pdf in pdfs:
            assert status[pdf.name][0] == "reviewed", status[pdf.name]
        assert status["fake.pdf"][0] == "failed" and "not a supported document" in status["fake.pdf"][1]
        assert status["blank.pdf"][0] == "failed" and "text on any of" in status["blank.pdf"][1]
        pair = {status[display_name(hostile)], status[pdfs[0].name]}  # the first listed one is reviewed
        assert pair in (
            {("reviewed", None), ("reviewed", f"same content as {pdfs[0].name}")},
            {("reviewed", None), ("reviewed", f"same content as {display_name(hostile)}")},
        ), pair
        with Session(get_engine(db_url)) as s:
            runs = s.exec(select(RunDocumentRow).where(RunDocumentRow.run_id == first["run_id"])).all()
            assert {r.source for r in runs} == {f"s3://{name}/{k}" for k in etags if k.lower().endswith(".pdf")}
            rows = {r.uri: r for r in s.exec(select(SourceObjectRow)).all()}
            assert {uri: r.etag for uri, r in rows.items()} == {
                f"s3://{name}/{k}": e for k, e in etags.items() if k.lower().endswith(".pdf")
            }
            for pdf in pdfs:
                assert rows[f"s3://{name}/contracts/{pdf.name}"].sha256 == hashlib.sha256(pdf.read_bytes()).hexdigest()
            findings = s.exec(select(func.count()).select_from(FindingRow)).one()
        assert findings > 0 and first["metrics"]["findings_total"] == findings
        assert dirs_before == set() and download_dirs() == set()  # every download and the run folder are gone
        report = json.loads((tmp_path / "out1" / "report.json").read_text())
        assert report["run"]["source"] == source

        import tasks.ingest.s3

        fetched: list[str] = []
        fetch = tasks.ingest.s3.fetch_s3_object

        def counting_fetch(obj, limits):
            fetched.append(obj.uri)
            return fetch(obj, limits)

        monkeypatch.setattr(tasks.ingest.s3, "fetch_s3_object", counting_fetch)
        second = review_documents(
            source=source, endpoint_url=s3_url, database_url=db_url, backend="rules", out_dir=str(tmp_path / "out2")
        )
        # known (uri, ETag) of reviewed content: reused without a download; only the failed ones are fetched again
        assert sorted(fetched) == [f"s3://{name}/contracts/blank.pdf", f"s3://{name}/contracts/fake.pdf"]
        again = {d["file_name"]: d["status"] for d in second["documents"]}
        assert again == {k: v[0] for k, v in status.items()}
        assert second["metrics"]["documents_skipped"] >= 3  # reused, not reviewed again
        with Session(get_engine(db_url)) as s:
            assert s.exec(select(func.count()).select_from(FindingRow)).one() == findings
            assert s.exec(select(func.count()).select_from(SourceObjectRow)).one() == len(rows)
            assert {r.last_run_id for r in s.exec(select(SourceObjectRow)).all()} == {second["run_id"]}
    finally:
        dispose_engines()


def test_review_cli_over_a_bucket_prints_hostile_names_verbatim(bucket, s3_url, tmp_path, prefect_harness):
    from typer.testing import CliRunner

    from cli.app import app

    name, client = bucket
    client.put_object(Bucket=name, Key="in/[bold red]x[link=mailto:a@e.test].pdf", Body=b"not a PDF")
    result = CliRunner().invoke(
        app,
        [
            "review",
            f"s3://{name}/in",
            "--endpoint-url",
            s3_url,
            "--backend",
            "rules",
            "--db",
            f"sqlite:///{tmp_path / 'cli.db'}",
            "--out",
            str(tmp_path / "out"),
        ],
    )
    dispose_engines()
    assert result.exit_code == 1, result.output  # its only object failed: nothing was reviewed
    assert (
        "failed [bold red]x[link=mailto:a@e.test].pdf: not a supported document" in result.output
    )  # markup in a key is text
    assert "Traceback" not in result.output
