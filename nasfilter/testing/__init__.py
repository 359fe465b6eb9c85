"""Helpers shipped for tests and benchmarks (fixtures in the real archive formats)."""
