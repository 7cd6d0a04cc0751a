"""Solvers of the residency problem (spec sections 9-12): homes, windows and copies."""
