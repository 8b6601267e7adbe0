# PYTHON_ARGCOMPLETE_OK
"""The `sherpa-skills` command line: one module per command group, `console` for output and exit codes."""

from .main import main

__all__ = ["main"]
