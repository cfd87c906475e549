"""The house's floors, pinned: no import cycle, no import that runs up a floor, no edge reached past its role.

Every import counts, the lazy ones inside functions and the ``TYPE_CHECKING`` ones too: a cycle
that only the type checker sees is still two modules that cannot be understood apart. The floors
are drawn in ``docs/architecture.md``; this table is their one home, and a module not placed in it
fails the test, so a new module is placed on purpose.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "configctl"

CORE, ROLES, EDGES, FEATURES, CONSOLE, LISTENER, CLI = range(7)
FLOOR_NAMES = ("core", "store roles", "edges", "features", "console", "listener", "cli")

FLOORS: Mapping[str, int] = {
    # the pure core: Kafka's rules and formats, no I/O beyond the operator's own files
    "configctl": CORE,
    "configctl.errors": CORE,
    "configctl.kafkacodes": CORE,
    "configctl.files": CORE,
    "configctl.identity": CORE,
    "configctl.ips": CORE,
    "configctl.entities": CORE,
    "configctl.values": CORE,
    "configctl.catalogue": CORE,
    "configctl.crosskey": CORE,
    "configctl.placement": CORE,
    "configctl.brokerkeys": CORE,
    "configctl.guards": CORE,
    "configctl.znodes": CORE,
    "configctl.sources": CORE,
    "configctl.snapshot": CORE,
    "configctl.applied": CORE,
    "configctl.timeref": CORE,
    "configctl.changes": CORE,
    "configctl.configparse": CORE,
    "configctl.precedence": CORE,
    "configctl.entitylevels": CORE,
    "configctl.validation": CORE,
    "configctl.handlers": CORE,
    "configctl.secrets": CORE,
    "configctl.digests": CORE,
    "configctl.migration": CORE,
    "configctl.migrationphase": CORE,
    "configctl.upgradelint": CORE,
    "configctl.gcpause": CORE,
    "configctl.agreement": CORE,
    "configctl.reported": CORE,
    "configctl.retrying": CORE,
    "configctl.zkconnection": CORE,
    "configctl.settings": CORE,
    "configctl.profiles": CORE,
    "configctl.policies": CORE,
    "configctl.rollout.parsing": CORE,
    # what every store offers, as roles, and their vocabulary (rollout records included)
    "configctl.store": ROLES,
    "configctl.rollout.record": ROLES,
    "configctl.rollout.restore": ROLES,
    "configctl.rollout.opening": ROLES,
    # the edges: each implements store roles over one outside system and translates its errors once
    "configctl.zk": EDGES,
    "configctl.adminapi": EDGES,
    "configctl.kraft": EDGES,
    "configctl.archive": EDGES,
    "configctl.localzk": EDGES,
    "configctl.localkafka": EDGES,
    "configctl.localkraft": EDGES,
    "configctl.localspark": EDGES,
    "configctl.localmigration": EDGES,
    # the features, written against the roles alone
    "configctl.writer": FEATURES,
    "configctl.impact": FEATURES,
    "configctl.interrupted": FEATURES,
    "configctl.rollback": FEATURES,
    "configctl.effective": FEATURES,
    "configctl.fleet": FEATURES,
    "configctl.brokersnapshot": FEATURES,
    "configctl.desired": FEATURES,
    "configctl.rollout": FEATURES,
    "configctl.travel": FEATURES,
    "configctl.audit": FEATURES,
    "configctl.documents": FEATURES,
    "configctl.migrationcheck": FEATURES,
    "configctl.migrationcarry": FEATURES,
    # on top: the console, the listener process, the command line (the two composition roots)
    "configctl.console": CONSOLE,
    "configctl.listener": LISTENER,
    "configctl.cli": CLI,
    "configctl.__main__": CLI,
}

EDGE_USERS = {LISTENER, CLI}
"""The floors that may name an edge: the composition roots, which pick the implementation of each
role (:func:`configctl.cli.context.new_store`, the listener's runtime). Features and the console
see the roles only."""


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules(root: Path = PACKAGE) -> dict[str, Path]:
    return {module_name(path, root): path for path in sorted(root.rglob("*.py"))}


def imports_of(name: str, path: Path, modules: Iterable[str]) -> set[str]:
    """The configctl modules ``name`` imports anywhere in its text (lazy and TYPE_CHECKING included)."""
    known = set(modules)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def resolve(target: str) -> str | None:
        while target and target not in known:
            target = target.rpartition(".")[0]
        return target or None

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            targets = [f"{stem}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            if target.split(".")[0] == "configctl" and (module := resolve(target)) and module != name:
                found.add(module)
    return found


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    modules = all_modules(root)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def floor_of(module: str, floors: Mapping[str, int] = FLOORS) -> int | None:
    """The floor of the longest entry of ``floors`` that is ``module`` or a package holding it."""
    probe = module
    while probe:
        if probe in floors:
            return floors[probe]
        probe = probe.rpartition(".")[0]
    return None


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Every group of modules that import each other round (Tarjan's strongly connected components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:  # iterative: no recursion limit whatever the graph's depth
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def violations(graph: Mapping[str, set[str]], floors: Mapping[str, int] = FLOORS) -> list[str]:
    """Each import that runs up a floor, or past a role into an edge, as one line."""
    found = []
    for module, targets in sorted(graph.items()):
        mine = floor_of(module, floors)
        for target in sorted(targets):
            theirs = floor_of(target, floors)
            if mine is None or theirs is None:
                continue
            if theirs > mine:
                found.append(
                    f"{module} ({FLOOR_NAMES[mine]}) imports {target} ({FLOOR_NAMES[theirs]}): up a floor"
                )
            elif theirs == EDGES and mine not in EDGE_USERS | {EDGES}:
                found.append(f"{module} ({FLOOR_NAMES[mine]}) imports the edge {target}: use a store role")
    return found


pytestmark = pytest.mark.unit


def test_every_module_has_a_floor() -> None:
    unplaced = [module for module in all_modules() if floor_of(module) is None]
    assert unplaced == [], f"place these in FLOORS (and docs/architecture.md): {unplaced}"


def test_no_import_cycle() -> None:
    assert cycles(import_graph()) == []


def test_no_import_runs_up_a_floor_or_past_a_role() -> None:
    assert violations(import_graph()) == []


def test_the_console_stands_on_the_features_not_on_the_cli() -> None:
    graph = import_graph()
    leaks = sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        if module.startswith("configctl.console")
        for target in targets
        if target.startswith("configctl.cli")
    )
    assert leaks == []


def test_no_module_is_a_hall() -> None:
    halls = {
        module: lines
        for module, path in all_modules().items()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert halls == {}, f"split these into modules of one idea each: {halls}"


# -- the checks themselves fail when they should --------------------------------------------------


def _tree(tmp_path: Path, files: Mapping[str, str]) -> Path:
    root = tmp_path / "configctl"
    for relative, text in files.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


def test_a_cycle_through_a_lazy_or_type_checking_import_is_found(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from configctl import b\n",
            "b.py": "def f():\n    from configctl.c import x\n",
            "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from configctl.a import y\n",
            "d.py": "from configctl import a\n",
        },
    )
    assert cycles(import_graph(root)) == [["configctl.a", "configctl.b", "configctl.c"]]


def test_an_upward_import_and_an_edge_past_its_role_are_found(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "entities.py": "from configctl.writer import write\n",
            "writer.py": "from configctl.zk.session import ZkSession\nfrom configctl import entities\n",
            "zk/__init__.py": "",
            "zk/session.py": "from configctl.store import Stored\n",
            "store.py": "",
            "cli/__init__.py": "from configctl.zk import session\n",
        },
    )
    assert violations(import_graph(root)) == [
        "configctl.entities (core) imports configctl.writer (features): up a floor",
        "configctl.writer (features) imports the edge configctl.zk.session: use a store role",
    ]


def test_relative_imports_resolve(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "handlers/__init__.py": "from .base import Handler\n",
            "handlers/base.py": "from ..cli import main\n",
            "cli/__init__.py": "",
            "cli/main.py": "",
        },
    )
    assert import_graph(root)["configctl.handlers.base"] == {"configctl.cli.main"}
