"""Solvers of the residency problem (docs/spec.md sections 9-12): homes, windows and copies."""
