from harness.cli import _entry

_entry()
