"""S3 source and watcher costs against a local S3 endpoint (moto server over HTTP).

``python -m benchmarks.s3_source [--keys 3000] [--big-mb 64]`` measures:

- ``list_keys_per_s``: keys listed per second by :func:`tasks.ingest.s3.list_s3_source`
  (``ListObjectsV2`` pages of 1000) over ``keys`` small objects;
- ``download_mb_per_s`` and ``download_rss_growth_mib``: one ``big_mb`` MB object fetched by
  :func:`tasks.ingest.s3.fetch_s3_object` (streamed, sha256 on the way) and how much the process's
  peak RSS grew meanwhile (MiB; expected ≈ 0, the download is streamed in 1 MiB blocks);
- ``sweep_first_s`` / ``sweep_repeat_s``: a watcher sweep over the ``keys`` objects into an
  empty SQLite cursor (every object claimed; events are not sent: no Prefect API is set, so the
  rows stay pending) and a repeated sweep (nothing new), seconds.

Figures depend on the machine and on moto (which is much slower than S3 per request); they are
for comparing changes, not a promise about AWS. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._harness import emit


def measure(keys: int, big_mb: int) -> dict[str, Any]:
    """Run the benchmark and return its result line (keys described in the module docstring)."""
    import logging

    from moto.server import ThreadedMotoServer

    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1")
    os.environ.pop("PREFECT_API_URL", None)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    logging.getLogger("docreview.watch").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        url = f"http://{host}:{port}"
        from schemas.settings import Limits
        from tasks.ingest.s3 import fetch_s3_object, list_s3_source, remove_downloads, s3_client
        from tasks.ingest.watch import WatchTarget, sweep
        from tasks.store.persist import dispose_engines

        client = s3_client(url)
        client.create_bucket(Bucket="bench")
        for i in range(keys):
            client.put_object(Bucket="bench", Key=f"in/{i:06d}.pdf", Body=b"%%PDF-1.4 %d" % i)
        started = time.perf_counter()
        objects = list_s3_source("s3://bench/in", endpoint_url=url)
        list_s = time.perf_counter() - started
        remove_downloads(objects)

        with tempfile.TemporaryDirectory(prefix="docreview-bench-") as tmp:
            big = Path(tmp) / "big.pdf"
            with big.open("wb") as fh:
                fh.write(b"%PDF-1.4\n")
                for _ in range(big_mb):
                    fh.write(os.urandom(1 << 20))
            client.upload_file(str(big), "bench", "big/big.pdf")
            big.unlink()
            (obj,) = list_s3_source("s3://bench/big/big.pdf", endpoint_url=url)
            rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
            started = time.perf_counter()
            out = fetch_s3_object(obj, Limits(max_file_bytes=(big_mb + 1) << 20))
            download_s = time.perf_counter() - started
            rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            assert out.failure is None, out.reason
            remove_downloads([obj])

            target = WatchTarget(source="s3://bench/in", database_url=f"sqlite:///{tmp}/cursor.db", endpoint_url=url)
            started = time.perf_counter()
            sweep(target)
            first_s = time.perf_counter() - started
            started = time.perf_counter()
            sweep(target)
            repeat_s = time.perf_counter() - started
            dispose_engines()
        return {
            "benchmark": "s3_source",
            "keys": keys,
            "list_s": round(list_s, 2),
            "list_keys_per_s": round(keys / list_s, 1),
            "big_mb": round(obj.size_bytes / 1e6, 1),
            "download_mb_per_s": round(obj.size_bytes / 1e6 / download_s, 1),
            "download_rss_growth_mib": round((rss_after - rss_before) / 1024, 1),
            "sweep_first_s": round(first_s, 2),
            "sweep_repeat_s": round(repeat_s, 2),
        }
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.s3_source")
    parser.add_argument("--keys", type=int, default=3000, help="small objects listed and swept")
    parser.add_argument("--big-mb", type=int, default=64, help="size of the downloaded object, MiB")
    args = parser.parse_args(argv)
    emit(measure(args.keys, args.big_mb))
    return 0


if __name__ == "__main__":
    sys.exit(main())
