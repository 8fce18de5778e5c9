"""The layers of docs/architecture.md, pinned: every import points to the same layer or one below.

Every ``import`` of a vertexbatch module is read from the source with ``ast`` (those inside
functions too), as ``__all__`` is pinned in tests/test_exported_members.py. Imports under
``if TYPE_CHECKING:`` are left out: they exist for annotations only and are never run, so they are
no edge at run time. An edge to a higher layer fails, and so does a cycle among the modules of one
layer; the failure names the edge and its file:line.

The local stack (``vertexbatch/emulator/``) shares no code with the client on purpose (a client
bug must not hide behind the same bug in the service): only ``LocalStack.client()`` and
``LocalStack.environment()`` use the client, to build one and to name the variables
``Client.from_env`` reads. The client reaches the stack only from the command (``vertexbatch
emulator``, ``vertexbatch demo``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "vertexbatch"
EMULATOR = "emulator"  # the package vertexbatch/emulator/, one node of the client's graph

# Bottom first. A module may import modules of its own layer (with no cycle) and of lower ones.
LAYERS: list[tuple[str, set[str]]] = [
    (
        "values, errors, rules (pure)",
        {
            "_models",
            "_errors",
            "_rules",
            "_controls",
            "_schedule",
            "_json",
            "_schema",
            "_progress",
            "_request_fields",
            "_type_walk",
        },
    ),
    (
        "I/O and cross-cutting",
        {
            "_retry",
            "_bigquery",
            "_bigquery.dest",
            "_bigquery.read",
            "_bigquery.source",
            "_bigquery.share",
            "_gcs",
            "_gcs.upload",
            "_gcs.ranged_read",
            "_gcs.parts",
            "_gcs.line_blocks",
            "_gcs.staging",
            "_vertex",
            "_telemetry",
            "_tracing",
            "_sdk_logs",
            "_cloud",
            "_client_base",
            "_lifecycle",
            "_aio_threads",
            "_online_call",
        },
    ),
    (
        "building and correlating lines (pure)",
        {
            "_lines",
            "_field_check",
            "_claude_shape",
            "_gemini_body",
            "_plain",
            "_importer",
            "_field_types",
            "_keymap",
            "_dedupe",
            "_schema_forms",
        },
    ),
    (
        "one output row, one Result (pure)",
        {"_outcomes", "_usual", "_failures", "_content", "_parsed"},
    ),
    ("the provider table (pure)", {"_providers"}),
    ("the staged folder", {"_manifest", "_staged"}),
    (
        "the answer cache",
        {
            "_cache",
            "_cache.store",
            "_cache.entry",
            "_cache.files",
            "_cache.fill",
            "_cache.submission",
        },
    ),
    ("one job: submitting and reading", {"_identity", "_stage", "_lookup", "_results"}),
    (
        "runs over many jobs, and waiting",
        {
            "_runs",
            "_runs.start",
            "_runs.run",
            "_runs.jobs",
            "_runs.read",
            "_runs.records",
            "_runs.step",
            "_runs.plan",
            "_runs.ledger",
            "_runs.online",
            "_runs.claim",
            "_runs.online_rows",
            "_runs.sink",
            "_runs.tasks",
            "_runs.registry",
            "_runs.tasked",
            "_runs.shares",
            "_wait",
        },
    ),
    (
        "the public Client, its async view, plans",
        {
            "_client",
            "_operations",
            "_request_lines",
            "_request_files",
            "_submit_options",
            "_aio",
            "_config",
            "_estimate",
            "_prices",
            "_tokens",
        },
    ),
    (
        "checks of a project",
        {
            "_checks",
            "_checks.doctor",
            "_checks.doctor_access",
            "_checks.doctor_bigquery",
            "_checks.doctor_controls",
            "_checks.doctor_run",
            "_checks.doctor_rules",
            "_checks.probe",
            "_checks.probe_shape",
            "_checks.probe_stage",
        },
    ),
    ("the public names", {"__init__"}),
    ("the local stack", {EMULATOR}),
    (
        "the command and the demo",
        {
            "__main__",
            "_command",
            "_command.cli",
            "_command.cli_options",
            "_command.cli_render",
            "_command.cli_requests",
            "_command.cli_plan",
            "_command.cli_controls",
            "_command.cli_runs",
            "_command.cli_local",
            "_command.cli_doctor",
            "_command.cli_probe",
            "_command.cli_progress",
            "_command.demo",
            "_command.demo_data",
            "_command.demo_cache",
            "_command.demo_bigquery",
        },
    ),
]

# (importer, imported) -> why the edge may point up. Keep it empty: fix the code instead.
EXCEPTIONS: dict[tuple[str, str], str] = {}

# What of the client the local stack may import, and where it may use it.
STACK_MODULE = "_stack.py"
STACK_IMPORTS = {
    "vertexbatch": {"Client", "RetryPolicy"},
    "vertexbatch._config": {
        "BUCKET",
        "DEFAULT_PREFIX",
        "LOCATION",
        "PREFIX",
        "PROJECT",
        "STORAGE_ENDPOINT",
        "VERTEX_ENDPOINT",
    },
}
STACK_USERS = {"LocalStack.client", "LocalStack.environment"}  # where those names may be used

# What any module of the local stack may import from the package besides: which fields a
# request may carry, read from the SDKs' own types (no client logic; it imports no other
# vertexbatch module but its walk, ``_type_walk``, which imports none). The stack refuses what
# the provider would by the same table the client checks before staging, so that the two
# cannot disagree about which fields exist; tests/test_request_fields.py holds the table to
# the SDK types themselves.
SHARED_WITH_STACK = {"vertexbatch._request_fields": {"claude_unknown", "gemini_unknown"}}


@dataclass(frozen=True)
class Edge:
    """One import of a vertexbatch module by another, where it is written."""

    source: str
    target: str
    path: Path
    line: int

    def __str__(self) -> str:
        where = self.path.relative_to(PACKAGE.parent)
        return f"{self.source} -> {self.target} ({where}:{self.line})"


def _type_checking_only(tree: ast.Module) -> set[int]:
    """The ids of the nodes under ``if TYPE_CHECKING:`` (annotations only, never run)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in (
            "TYPE_CHECKING",
            "typing.TYPE_CHECKING",
        ):
            for statement in node.body:
                skipped.update(id(inner) for inner in ast.walk(statement))
    return skipped


def _imports(path: Path) -> Iterator[tuple[ast.Import | ast.ImportFrom, list[str]]]:
    """Each run-time import in ``path`` with the absolute names of the modules it imports
    (``from . import x`` and ``from pkg import x`` import ``pkg.x`` when that is a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    skipped = _type_checking_only(tree)
    package = path.relative_to(PACKAGE.parent).parent.parts
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            yield node, [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = list(package[: len(package) - node.level + 1]) if node.level else []
            stem = ".".join(base + ([node.module] if node.module else []))
            yield node, sorted({_module(stem, alias.name) for alias in node.names})


def _module(stem: str, name: str) -> str:
    """``stem.name`` if that is a module of the package, else ``stem`` (``name`` is in it)."""
    folder = PACKAGE.parent.joinpath(*stem.split("."), name)
    is_module = folder.with_suffix(".py").is_file() or (folder / "__init__.py").is_file()
    return f"{stem}.{name}" if is_module else stem


def _node_of(name: str) -> str | None:
    """The client's node a module name stands for (``None``: not vertexbatch's): ``__init__``
    for the package itself, the stack as one node, else the dotted path below ``vertexbatch``
    (``_runs.step``; a subpackage's own ``__init__`` is its name, ``_runs``)."""
    parts = name.split(".")
    if parts[0] != "vertexbatch":
        return None
    if len(parts) == 1:
        return "__init__"
    return EMULATOR if parts[1] == EMULATOR else ".".join(parts[1:])


def _client_modules() -> Iterator[tuple[str, Path]]:
    """Each module of the client (the stack left out) with its node name."""
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[0] == EMULATOR:
            continue
        if parts == ("__init__",):
            yield "__init__", path
        elif parts[-1] == "__init__":
            yield ".".join(parts[:-1]), path
        else:
            yield ".".join(parts), path


def client_edges() -> list[Edge]:
    """Every run-time import between the client's modules (the stack counts as one node)."""
    edges = []
    for source, path in _client_modules():
        for node, names in _imports(path):
            for name in names:
                target = _node_of(name)
                if target is not None and target != source:
                    edges.append(Edge(source, target, path, node.lineno))
    return edges


def layer_problems(edges: Iterable[Edge], layers: list[tuple[str, set[str]]]) -> list[str]:
    """Each edge that points to a higher layer, and each cycle among a layer's modules."""
    level = {module: index for index, (_, modules) in enumerate(layers) for module in modules}
    problems = []
    same: dict[str, list[Edge]] = {}
    for edge in edges:
        if (edge.source, edge.target) in EXCEPTIONS:
            continue
        up, down = level[edge.source], level[edge.target]
        if down > up:
            problems.append(
                f"{edge} points up: from {layers[up][0]!r} to {layers[down][0]!r}; move the "
                "code to the concept it belongs to, or hand a small value down"
            )
        elif down == up:
            same.setdefault(edge.source, []).append(edge)
    problems.extend(f"cycle in one layer: {', '.join(map(str, c))}" for c in _cycles(same))
    return problems


def _cycles(graph: dict[str, list[Edge]]) -> list[list[Edge]]:
    """The cycles of ``graph`` a depth-first walk finds: each edge back to the path closes one."""
    found: list[list[Edge]] = []
    done: set[str] = set()

    def visit(module: str, path: list[Edge], on_path: dict[str, int]) -> None:
        on_path[module] = len(path)
        for edge in graph.get(module, []):
            if edge.target in on_path:
                found.append([*path[on_path[edge.target] :], edge])
            elif edge.target not in done:
                visit(edge.target, [*path, edge], on_path)
        del on_path[module]
        done.add(module)

    for module in sorted(graph):
        if module not in done:
            visit(module, [], {})
    return found


def test_every_module_has_one_layer() -> None:
    """Each module of the package is in exactly one layer, and every layer's module exists."""
    placed = [module for _, modules in LAYERS for module in modules]
    assert len(placed) == len(set(placed)), "a module is in two layers"
    present = {name for name, _ in _client_modules()} | {EMULATOR}
    assert present - set(placed) == set(), "place the new module in LAYERS (and the docs' table)"
    assert set(placed) - present == set(), "a module in LAYERS no longer exists"


def test_each_package_sits_in_one_layer() -> None:
    """A subpackage is one box of the diagram: its modules are all in its own layer."""
    level = {module: index for index, (_, modules) in enumerate(LAYERS) for module in modules}
    packages = {name for name, path in _client_modules() if path.name == "__init__.py"}
    split = {
        package: sorted({LAYERS[level[m]][0] for m in level if m.split(".")[0] == package})
        for package in packages - {"__init__"}
    }
    assert {p: layers for p, layers in split.items() if len(layers) != 1} == {}


def test_every_import_points_down() -> None:
    """No import between client modules points up or closes a cycle (docs/architecture.md)."""
    problems = layer_problems(client_edges(), LAYERS)
    assert not problems, "\n".join(problems)


def test_the_check_names_an_upward_edge_and_a_cycle() -> None:
    """The check itself: an edge up and a cycle in one layer are each reported with file:line."""
    here = PACKAGE / "_x.py"
    layers = [("low", {"a", "b"}), ("high", {"c"})]
    edges = [Edge("a", "b", here, 3), Edge("b", "a", here, 4), Edge("a", "c", here, 5)]
    problems = layer_problems(edges, layers)
    assert len(problems) == 2
    assert problems[0].startswith("a -> c (vertexbatch/_x.py:5) points up")
    assert "a -> b (vertexbatch/_x.py:3)" in problems[1]
    assert "b -> a (vertexbatch/_x.py:4)" in problems[1]
    assert layer_problems(edges[:1] + edges[2:], [("one", {"a", "b", "c"})]) == []


def _stack_uses(tree: ast.Module, names: set[str]) -> Iterator[tuple[str, int, str]]:
    """Each use of ``names`` in ``tree``: the name, its line and where it is (``Class.method``,
    or the enclosing definitions joined by dots; ``""`` at the top of the module)."""

    def walk(node: ast.AST, where: tuple[str, ...]) -> Iterator[tuple[str, int, str]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                yield from walk(child, (*where, child.name))
                continue
            if isinstance(child, ast.Name) and child.id in names:
                yield child.id, child.lineno, ".".join(where)
            yield from walk(child, where)

    return walk(tree, ())


def test_the_shared_field_table_imports_nothing_of_the_client() -> None:
    """What the stack shares (SHARED_WITH_STACK) imports no vertexbatch module but its walk,
    and the walk none at all."""
    allowed = {"_request_fields": {"_type_walk"}, "_type_walk": set()}
    for module, may in allowed.items():
        for node, names in _imports(PACKAGE / f"{module}.py"):
            targets = {_node_of(name) for name in names} - {None}
            assert targets <= may, (
                f"{module} imports {sorted(map(str, targets))} (line {node.lineno})"
            )


def test_the_local_stack_shares_no_code_with_the_client() -> None:
    """vertexbatch/emulator/ imports the client only in _stack.py, only the names LocalStack's
    client() and environment() use, and uses them nowhere else (besides SHARED_WITH_STACK)."""
    problems = []
    for path in sorted((PACKAGE / EMULATOR).rglob("*.py")):
        where = path.relative_to(PACKAGE.parent)
        for node, names in _imports(path):
            for name in names:
                node_name = _node_of(name)
                if node_name is None or node_name == EMULATOR:
                    continue
                imported = {alias.name for alias in node.names}
                allowed = STACK_IMPORTS.get(name, set()) if path.name == STACK_MODULE else set()
                allowed = allowed | SHARED_WITH_STACK.get(name, set())
                if not isinstance(node, ast.ImportFrom) or not imported <= allowed:
                    problems.append(f"{where}:{node.lineno} imports {name} {sorted(imported)}")
    stack = PACKAGE / EMULATOR / STACK_MODULE
    tree = ast.parse(stack.read_text(encoding="utf-8"))
    names = set().union(*STACK_IMPORTS.values())
    for name, line, function in _stack_uses(tree, names):
        if not any(function == user or function.startswith(user + ".") for user in STACK_USERS):
            problems.append(f"{stack.relative_to(PACKAGE.parent)}:{line} uses {name} in {function}")
    assert not problems, "\n".join(problems)
