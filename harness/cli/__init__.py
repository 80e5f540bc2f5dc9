"""The command line: one module per command group (runs, inspect, labels, export_config),
each parsing its arguments, calling a public function and rendering through
`harness.report`."""

from harness.cli.app import _entry, build_parser, main

__all__ = ["_entry", "build_parser", "main"]
