"""Ingest: list source objects (folder, S3), fingerprint them, extract text per page; the watcher."""
