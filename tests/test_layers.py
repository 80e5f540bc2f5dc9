"""The packages of harness form a layered graph: a package imports only from lower layers.

Layers, lowest first (a package may import any package of a lower layer, none of its own
layer or above):

    0  errors, types, secrets, files, words,       shared vocabulary; no harness imports
       noise, components
    1  metrics                                     pure metric functions over the types
    2  config                                      the experiment file, parsed and checked
    3  log                                         run and sweep folders, their records
    4  stores                                      caches, storage, sweep tables in a database
    5  corpus, retrieval, llm                      documents, indexes and rerankers, chat
    6  judge                                       grading retrieved chunks
    7  pipeline, testing                           one run end to end; fakes for tests
    8  generate, sweep                             questions from documents; Optuna sweeps
    9  analysis                                    validate, calibrate, compare, label
    10 report                                      the terminal's tables, the HTML page
    11 cli                                         the command line
    12 __main__                                    `python -m harness`

Imports are read with `ast` from every module under harness/, at any depth (inside
functions and `if TYPE_CHECKING:` too: a deferred import is still a dependency). Also
checked: no import cycle between packages, no import cycle between the modules of one
package (a submodule importing its own package's `__init__` aside), and a short list of
modules kept out of a package its layer would allow (`KEPT_OUT`).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[1] / "harness"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "types", "secrets", "files", "words", "noise", "components"),
    ("metrics",),
    ("config",),
    ("log",),
    ("stores",),
    ("corpus", "retrieval", "llm"),
    ("judge",),
    ("pipeline", "testing"),
    ("generate", "sweep"),
    ("analysis",),
    ("report",),
    ("cli",),
    ("__main__",),
)
RANK = {package: n for n, layer in enumerate(LAYERS) for package in layer}

KEPT_OUT: dict[str, tuple[str, ...]] = {"harness.llm.local": ("harness.pipeline",)}
"""Modules a package must not import although its layer allows it: the pipeline hashes
files with a file helper, not with the llama.cpp launcher's."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(HARNESS.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(HARNESS.rglob("*.py"))}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The harness modules `name` imports (`from pkg import submodule` as the submodule)."""
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            targets = [module, *(f"{module}.{a.name}" for a in node.names)]
        else:
            continue
        for target in targets:
            # the deepest harness module the import names
            parts = target.split(".")
            while parts and ".".join(parts) not in known:
                parts.pop()
            if parts and parts[0] == "harness" and ".".join(parts) != name:
                out.add(".".join(parts))
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, path, known) for name, path in modules.items()}


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "harness"


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _live_edges() -> list[tuple[str, str]]:
    """Every (importer, imported) module pair between packages, the pending ones aside."""
    return [
        (src, dst)
        for src, targets in _graph().items()
        for dst in targets
        if _package(src) != _package(dst)
    ]


def test_every_package_has_a_layer():
    packages = {_package(m) for m in _modules()} - {"harness"}
    missing = sorted(packages - set(RANK))
    assert not missing, f"declare the layer of {missing} in LAYERS (and the docstring)"


def test_no_package_imports_from_its_own_layer_or_above():
    upward = [
        f"{src} imports {dst} ({_package(src)}: layer {RANK[_package(src)]}, "
        f"{_package(dst)}: layer {RANK[_package(dst)]})"
        for src, dst in _live_edges()
        if _package(src) in RANK
        and _package(dst) in RANK
        and RANK[_package(dst)] >= RANK[_package(src)]
    ]
    assert not upward, "\n".join(sorted(upward))


def test_no_import_cycle_between_packages():
    edges: dict[str, set[str]] = defaultdict(set)
    for src, dst in _live_edges():
        edges[_package(src)].add(_package(dst))
    assert _cycles(edges) == []


def test_no_import_cycle_between_modules_of_a_package():
    # A submodule importing its own package (`from harness.generate import prompts`) is
    # how a package reaches its siblings; the package's __init__ importing the submodule
    # back is not a cycle worth the name.
    edges = {
        src: {
            dst
            for dst in targets
            if _package(src) == _package(dst) and not src.startswith(f"{dst}.")
        }
        for src, targets in _graph().items()
    }
    assert _cycles(edges) == []


def test_kept_out_modules_are_not_imported():
    leaks = [
        f"{src} imports {dst}"
        for src, targets in _graph().items()
        for dst in targets
        if dst in KEPT_OUT and src.startswith(tuple(f"{p}." for p in KEPT_OUT[dst]))
    ]
    assert not leaks, "\n".join(sorted(leaks))


def test_the_checker_sees_upward_and_deferred_imports(tmp_path):
    """The reader itself: a relative import, one inside a function, one under
    TYPE_CHECKING, and `from package import submodule` are all found."""
    pkg = tmp_path / "harness" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from . import sub\n")
    (pkg / "sub.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from ..other import thing\n"
        "if TYPE_CHECKING:\n    from harness.third import x\n"
        "def f():\n    from harness.fourth.deep import y\n"
    )
    known = {"harness.pkg", "harness.pkg.sub", "harness.other", "harness.third", "harness.fourth"}
    global HARNESS
    saved, HARNESS = HARNESS, tmp_path / "harness"
    try:
        found = _imports("harness.pkg.sub", pkg / "sub.py", known)
        init = _imports("harness.pkg", pkg / "__init__.py", known)
    finally:
        HARNESS = saved
    assert found == {"harness.other", "harness.third", "harness.fourth"}
    assert init == {"harness.pkg.sub"}
