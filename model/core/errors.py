"""Errors a user can cause: each message names the offending op, tensor, level, row or parameter."""
from __future__ import annotations


class MemplaceError(ValueError):
    """Bad input: the CLI prints the message on one line and exits with status 2."""


class InstanceError(MemplaceError):
    """An instance file breaks a rule of the spec (section 2)."""


class SolutionError(MemplaceError):
    """A solution file is malformed or does not belong to its instance."""


class ParameterError(MemplaceError):
    """An unknown name (solver, packer, problem, parameter) or a value out of range."""
