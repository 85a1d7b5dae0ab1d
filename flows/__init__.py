"""Prefect flows of docreview and its ``docreview`` command-line interface."""
