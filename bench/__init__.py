"""Benchmarks: `python -m bench.<name>`; each prints its measurements side by side."""
