"""Prefect tasks of the docreview pipeline and the adapters they use."""
