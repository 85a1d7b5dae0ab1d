"""Observe: run metrics, drift, alerts, Prefect events, reports and plots, evaluation."""
