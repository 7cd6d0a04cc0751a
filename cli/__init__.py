"""The `memplace` command line (`main`), apart from the harness it drives."""
from memplace.cli.main import main

__all__ = ["main"]
