"""The layers of docs/architecture.md, pinned: every import points to the same layer or one below.

Every ``import`` of a vertexbatch module is read from the source with ``ast`` (those inside
functions too), as ``__all__`` is pinned in tests/guards/test_exported_members.py. Imports under
``if TYPE_CHECKING:`` count too (the failure says "type-only"): never run, they still tie the
modules' meaning together, and a circle of them is a circle of concepts. An edge to a higher
layer fails, and so does a cycle among the nodes of one layer or the modules of one package; the
failure names the edge and its file:line.

One edge may point up, by design: ``Client.aio`` builds the async view, and ``_aio``, above
``_client``, wraps a client. It is imported inside the property (a lazy import, run when first
needed) and for its annotation, never at module level (``LAZY_UP``).

The local stack (``vertexbatch/emulator/``) is its own model of the service (a client bug must
not hide behind the same bug in the service), and uses the client in two places only:
``LocalStack.client()`` and ``LocalStack.environment()`` (``STACK_IMPORTS``, ``STACK_USERS``), to
build a client and to name the variables ``Client.from_env`` reads; and the table of request
fields its model refuses unknown ones by (``SHARED_WITH_STACK``: ``_requests.sdk_fields``, which
imports nothing of the client but its walk); and the model catalogue's rows
(``vertexbatch._catalogue.catalogue``, data read from ``models.toml``; the package imports nothing
of the client but ``_errors``), which the stack serves by default. The client reaches the stack
only from the command (``vertexbatch emulator``, ``vertexbatch demo``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "vertexbatch"
EMULATOR = "emulator"  # the package vertexbatch/emulator/, one node of the client's graph

# Bottom first: each entry is a package of the client or one of its few flat modules (its
# node). A node may import nodes of its own layer (with no cycle) and of lower ones; inside a
# package, modules import each other freely but with no cycle.
LAYERS: list[tuple[str, set[str]]] = [
    (
        "values, errors, rules (pure)",
        {"_errors", "_values", "_turns", "_json", "_rules", "_retry", "_hosts"},
    ),
    ("the model catalogue (pure data)", {"_catalogue"}),
    ("answer schemas (pure)", {"_schemas"}),
    ("request building and checking (pure)", {"_requests"}),
    ("one output row, one Result (pure)", {"_rows"}),
    (
        "the cloud's boundaries and cross-cutting",
        {
            "_deferred",
            "_observe",
            "_gcs",
            "_bigquery",
            "_lifecycle",
            "_vertex",
            "_cloud",
            "_aio_threads",
            "_config",
        },
    ),
    ("the provider table (pure)", {"_providers"}),
    ("the staged folder", {"_staged"}),
    ("the answer cache", {"_cache"}),
    ("one job: submit, find, read; waiting", {"_job", "_waiting"}),
    ("plans and prices", {"_plans"}),
    ("runs over many jobs", {"_runs"}),
    ("the public Client", {"_submission", "_operations", "_lanes", "_client"}),
    ("its async view, and the functions that take a client", {"_aio", "_functions"}),
    ("checks of a project", {"_checks"}),
    ("the public names", {"__init__"}),
    ("the local stack", {EMULATOR}),
    ("the command and the demo", {"_command", "__main__"}),
]

# (importer, imported) -> why a lazy import (inside a function), and the type-only import of its
# annotation, may point up. Nothing else may: a module-level import up fails all the same, and so
# does any edge up between other nodes. Keep it to this one.
LAZY_UP: dict[tuple[str, str], str] = {
    ("_client", "_aio"): "Client.aio builds its async view when first read; _aio wraps a Client",
}

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
# vertexbatch module but its walk, ``_requests.type_walk``, which imports none). The stack
# refuses what the provider would by the same table the client checks before staging, so
# that the two cannot disagree about which fields exist; tests/requests/test_request_fields.py holds
# the table to the SDK types themselves.
#
# And the model catalogue: the rows of ``vertexbatch/_catalogue/models.toml`` (publisher, id,
# locations: Google's facts, data and no client logic), so that the stack serves every model the
# client knows, where the catalogue says (docs/local-stack.md, "The model catalogue").
SHARED_WITH_STACK = {
    "vertexbatch._requests.sdk_fields": {"claude_unknown", "gemini_unknown"},
    "vertexbatch._catalogue": {"catalogue"},
}


@dataclass(frozen=True)
class Edge:
    """One import of a vertexbatch module by another, where it is written."""

    source: str
    target: str
    path: Path
    line: int
    kind: str = ""  # "" at module level, "lazy" inside a function, "type-only" for annotations

    def __str__(self) -> str:
        where = self.path.relative_to(PACKAGE.parent)
        kind = f", {self.kind}" if self.kind else ""
        return f"{self.source} -> {self.target} ({where}:{self.line}{kind})"


def _kinds(tree: ast.Module) -> dict[int, str]:
    """The kind of each node not at module level, by id: ``"type-only"`` under ``if
    TYPE_CHECKING:`` (annotations only, never run), ``"lazy"`` inside a function's body. One
    walk down the tree, each node's kind handed to its children."""
    kinds: dict[int, str] = {}

    def visit(node: ast.AST, kind: str) -> None:
        if kind:
            kinds[id(node)] = kind
        body: set[int] = set()  # the ids of the statements whose kind is ``inner``
        inner = kind
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            body, inner = {id(s) for s in node.body}, kind if kind == "type-only" else "lazy"
        elif isinstance(node, ast.If) and ast.unparse(node.test) in (
            "TYPE_CHECKING",
            "typing.TYPE_CHECKING",
        ):
            body, inner = {id(s) for s in node.body}, "type-only"
        for child in ast.iter_child_nodes(node):
            visit(child, inner if id(child) in body else kind)

    visit(tree, "")
    return kinds


def _imports(path: Path) -> Iterator[tuple[ast.Import | ast.ImportFrom, list[str], str]]:
    """Each import in ``path`` with the absolute names of the modules it imports (``from . import
    x`` and ``from pkg import x`` import ``pkg.x`` when that is a module) and its kind (see
    ``_kinds``; ``""`` at module level)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    kinds = _kinds(tree)
    package = path.relative_to(PACKAGE.parent).parent.parts
    for node in ast.walk(tree):
        kind = kinds.get(id(node), "")
        if isinstance(node, ast.Import):
            yield node, [alias.name for alias in node.names], kind
        elif isinstance(node, ast.ImportFrom):
            base = list(package[: len(package) - node.level + 1]) if node.level else []
            stem = ".".join(base + ([node.module] if node.module else []))
            yield node, sorted({_module(stem, alias.name) for alias in node.names}), kind


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
    """Every import between the client's modules, type-only ones too (the stack counts as one
    node)."""
    edges = []
    for source, path in _client_modules():
        for node, names, kind in _imports(path):
            for name in names:
                target = _node_of(name)
                if target is not None and target != source:
                    edges.append(Edge(source, target, path, node.lineno, kind))
    return edges


def node_of(module: str) -> str:
    """The layer node a module belongs to: its top-level package, or the flat module itself."""
    return module.split(".")[0]


def layer_problems(edges: Iterable[Edge], layers: list[tuple[str, set[str]]]) -> list[str]:
    """Each edge that points to a higher layer, each cycle among a layer's nodes, and each cycle
    among the modules of one package (edges are between modules; ``node_of`` names their node)."""
    level = {node: index for index, (_, nodes) in enumerate(layers) for node in nodes}
    problems = []
    same: dict[str, list[Edge]] = {}
    inside: dict[str, list[Edge]] = {}
    for edge in edges:
        source, target = node_of(edge.source), node_of(edge.target)
        if edge.kind in ("lazy", "type-only") and (source, target) in LAZY_UP:
            continue
        if source == target:
            inside.setdefault(edge.source, []).append(edge)
            continue
        up, down = level[source], level[target]
        if down > up:
            problems.append(
                f"{edge} points up: from {layers[up][0]!r} to {layers[down][0]!r}; move the "
                "code to the concept it belongs to, or hand a small value down"
            )
        elif down == up:
            same.setdefault(source, []).append(
                Edge(source, target, edge.path, edge.line, edge.kind)
            )
    problems.extend(f"cycle in one layer: {', '.join(map(str, c))}" for c in _cycles(same))
    problems.extend(f"cycle in one package: {', '.join(map(str, c))}" for c in _cycles(inside))
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


def test_every_node_has_one_layer() -> None:
    """Each package and flat module of the client is in exactly one layer, and every layer's
    node exists."""
    placed = [node for _, nodes in LAYERS for node in nodes]
    assert len(placed) == len(set(placed)), "a node is in two layers"
    present = {node_of(name) for name, _ in _client_modules()} | {EMULATOR}
    assert present - set(placed) == set(), "place the new package in LAYERS (and the docs' map)"
    assert set(placed) - present == set(), "a node in LAYERS no longer exists"


# Issue 39: the tree is the map, so few modules stand alone beside the packages (the public
# face and what truly stands alone); the package's ``__init__`` and ``__main__`` are not counted.
MOST_FLAT = 16


def test_few_modules_stay_flat() -> None:
    """At most ``MOST_FLAT`` modules sit flat at the package's top; a new concept is a package."""
    flat = sorted(
        path.stem for path in PACKAGE.glob("*.py") if path.stem not in {"__init__", "__main__"}
    )
    assert len(flat) <= MOST_FLAT, (
        f"{len(flat)} flat modules at vertexbatch/'s top, at most {MOST_FLAT}: put a new module "
        f"in the package of its concept (docs/architecture.md): {', '.join(flat)}"
    )


def test_every_import_points_down() -> None:
    """No import between client packages points up or closes a cycle, and none between the
    modules of one package closes a cycle (docs/architecture.md)."""
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
    # Modules of one package import each other freely, but not in a circle.
    inner = [Edge("a.x", "a.y", here, 6), Edge("a.y", "a.x", here, 7), Edge("a.x", "b", here, 8)]
    problems = layer_problems(inner, layers)
    assert len(problems) == 1 and problems[0].startswith("cycle in one package: a.x -> a.y")
    assert layer_problems(inner[::2], layers) == []
    # An import for annotations only counts as any other: up, or closing a circle.
    typed = [Edge("a", "c", here, 9, "type-only"), Edge("c", "a", here, 10)]
    problems = layer_problems(typed, layers)
    assert problems == [
        "a -> c (vertexbatch/_x.py:9, type-only) points up: from 'low' to 'high'; move the code "
        "to the concept it belongs to, or hand a small value down"
    ]
    problems = layer_problems(typed, [("one", {"a", "c"})])
    assert len(problems) == 1 and "a -> c (vertexbatch/_x.py:9, type-only)" in problems[0]
    # Only the one edge of LAZY_UP may point up, and only lazily (or for its annotation).
    (allowed,) = LAZY_UP
    lazy_layers = [("low", {allowed[0]}), ("high", {allowed[1]})]
    for kind in ("lazy", "type-only"):
        assert layer_problems([Edge(*allowed, here, 11, kind)], lazy_layers) == []
    assert len(layer_problems([Edge(*allowed, here, 12)], lazy_layers)) == 1
    assert len(layer_problems([Edge("a", "c", here, 13, "lazy")], layers)) == 1


def test_imports_are_read_with_their_kind() -> None:
    """An import at module level, inside a function and under ``if TYPE_CHECKING:`` is each
    read, with its kind."""
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "from ._values import Job\n"
        "if TYPE_CHECKING:\n"
        "    from ._rules import check_id\n"
        "def f() -> None:\n"
        "    from ._retry import RetryPolicy\n"
    )
    kinds = _kinds(tree)
    found = {
        node.module: kinds.get(id(node), "")
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module != "typing"
    }
    assert found == {"_values": "", "_rules": "type-only", "_retry": "lazy"}


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
    allowed = {"_requests.sdk_fields": {"_requests.type_walk"}, "_requests.type_walk": set()}
    for module, may in allowed.items():
        for node, names, _ in _imports(PACKAGE.joinpath(*module.split(".")).with_suffix(".py")):
            targets = {_node_of(name) for name in names} - {None}
            assert targets <= may, (
                f"{module} imports {sorted(map(str, targets))} (line {node.lineno})"
            )


def test_the_shared_catalogue_imports_nothing_of_the_client() -> None:
    """The catalogue the stack reads (SHARED_WITH_STACK) imports no vertexbatch module but its
    own and ``_errors``."""
    for path in sorted((PACKAGE / "_catalogue").glob("*.py")):
        for node, names, _ in _imports(path):
            targets = {_node_of(name) for name in names} - {None}
            outside = {t for t in targets if t != "_errors" and t.split(".")[0] != "_catalogue"}
            assert not outside, f"{path.name} imports {sorted(map(str, outside))} ({node.lineno})"


def test_the_local_stack_shares_no_code_with_the_client() -> None:
    """vertexbatch/emulator/ imports the client only in _stack.py, only the names LocalStack's
    client() and environment() use, and uses them nowhere else (besides SHARED_WITH_STACK)."""
    problems = []
    for path in sorted((PACKAGE / EMULATOR).rglob("*.py")):
        where = path.relative_to(PACKAGE.parent)
        for node, names, _ in _imports(path):
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
