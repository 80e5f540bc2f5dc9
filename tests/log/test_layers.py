"""The result log sits below the stores: `harness.log` (records, files) imports nothing from
`harness.stores` (caches, PostgreSQL), nor from the packages above both; the stores import
the log's records, never the sweep, pipeline, report or CLI that use them (#21)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[2] / "harness"
ABOVE = ("harness.sweep", "harness.pipeline", "harness.report", "harness.cli")


def imported(package: str) -> dict[str, set[str]]:
    """Module file -> the harness modules it imports (at any depth, lazily or not)."""
    out: dict[str, set[str]] = {}
    for f in sorted((HARNESS / package).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
        out[str(f.relative_to(HARNESS))] = {n for n in names if n.startswith("harness")}
    return out


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [("log", ("harness.stores", *ABOVE)), ("stores", ABOVE)],
)
def test_no_upward_import(package, forbidden):
    bad = {
        f: sorted(n for n in names if n.startswith(forbidden))
        for f, names in imported(package).items()
        if any(n.startswith(forbidden) for n in names)
    }
    assert not bad, f"harness.{package} imports from a layer above it: {bad}"
