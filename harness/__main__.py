"""`python -m harness`: the same command line as the `harness` script."""

from harness.cli import _entry

_entry()
