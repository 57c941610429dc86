"""Benchmarks: side-by-side timings in one process that write JSON (never used by tests)."""
