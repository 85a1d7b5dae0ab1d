"""Store: database engines, idempotent writes and reads, document claims."""
