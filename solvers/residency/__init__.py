"""Solvers of the residency problem (spec sections 9-12), and the game they can play."""
