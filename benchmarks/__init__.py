"""Benchmarks (``make bench``): throughput and cost figures, never timed tests."""
