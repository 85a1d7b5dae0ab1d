"""Pydantic models (LLM I/O, settings, pipeline data) and SQLModel tables, kept separate."""
