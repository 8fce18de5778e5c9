"""Code that differs by provider reads the provider table: switches on provider strings, counted.

A switch is a place outside the table that names the providers to choose between them: a
comparison with a provider's name (``provider == "anthropic"``, ``name != "gemini"``,
``provider in ("anthropic", "google")``), a ``match`` with a case of one, a dict literal keyed by
two or more of them, or a tuple, list or set literal of two or more of them (``for name in
("claude", "gemini")``). The names are each row's ``provider`` and ``command``
(``vertexbatch/_providers.py``). Every one is read with ``ast`` from ``vertexbatch/`` outside
``vertexbatch/emulator/`` (the local stack shares no code with the client on purpose) and outside
the table itself; a failure names each switch by file:line.

A switch is a place a new lane (embeddings, open models) would have to find and edit: instead it
adds one row to ``PROVIDERS`` and, where a column must sit below the table's layer or belongs
to one concept, one row to a table of that concept held to the provider table (``SUBTABLES``).
Passing a provider's name as an argument (``check_model(model, "anthropic")``) is no switch, nor
is the ``Provider`` type's ``Literal`` (``_values.PROVIDER_NAMES`` reads it; tests/test_providers.py
holds it to the table's rows).
"""

from __future__ import annotations

import ast
import functools
import importlib
from dataclasses import dataclass
from pathlib import Path

from vertexbatch._providers import COMMANDS, PROVIDERS

PACKAGE = Path(__file__).resolve().parents[2] / "vertexbatch"
NAMES = frozenset(PROVIDERS) | frozenset(COMMANDS)
TABLE = "_providers.py"
EMULATOR = "emulator"

# The tables of one concept, one row per provider, that sit beside or below the provider table:
# (file, name) -> their module. Each is keyed by exactly the table's providers or commands
# (test_each_subtable_has_the_table_s_rows), and tests/test_providers.py holds each that copies
# a column to that column.
SUBTABLES: dict[tuple[str, str], str] = {
    ("_rules.py", "FAMILIES"): "vertexbatch._rules",
    ("_rules.py", "LANES"): "vertexbatch._rules",
    ("_rows/classify.py", "READERS"): "vertexbatch._rows.classify",
    ("_rows/fast_path.py", "USUAL_READERS"): "vertexbatch._rows.fast_path",
    ("_bigquery/source.py", "ROW_REQUESTS"): "vertexbatch._bigquery.source",
    ("_command/cli_requests.py", "_REQUESTS"): "vertexbatch._command.cli_requests",
    ("_checks/probe_shape.py", "PROBE_LANES"): "vertexbatch._checks.probe_shape",
    ("_plans/spend.py", "CACHE_BILLING"): "vertexbatch._plans.spend",
    ("_turns.py", "TURNS"): "vertexbatch._turns",
}

# (file, enclosing function) -> why the switch stays. At most MOST_ALLOWED.
ALLOWED: dict[tuple[str, str], str] = {
    (
        "_command/cli_probe.py",
        "probe",
    ): "the command's --claude-model and --gemini-model options, one click option each, are "
    "gathered into the models run_probe reads by command name",
}
MOST_ALLOWED = 3


@dataclass(frozen=True)
class Switch:
    file: str  # relative to vertexbatch/
    line: int
    function: str  # the enclosing function ("" at module level)
    what: str

    def __str__(self) -> str:
        return f"vertexbatch/{self.file}:{self.line} ({self.function or 'module'}): {self.what}"


def _named(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value in NAMES


def _names_in(node: ast.AST) -> int:
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return sum(_named(element) for element in node.elts)
    return 0


def _table_values(tree: ast.Module, file: str) -> set[int]:
    """The ids of every node inside the value of a subtable's assignment in ``file``."""
    inside: set[int] = set()
    for node in tree.body:
        target = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        if isinstance(target, ast.Name) and (file, target.id) in SUBTABLES:
            inside |= {id(child) for child in ast.walk(value)}
    return inside


def _literal_types(tree: ast.Module) -> set[int]:
    """The ids of the nodes of every ``Literal[...]`` subscript: a type, no switch."""
    return {
        id(child)
        for node in ast.walk(tree)
        if isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name | ast.Attribute)
        and (node.value.id if isinstance(node.value, ast.Name) else node.value.attr) == "Literal"
        for child in ast.walk(node.slice)
    }


def switches_in(source: str, file: str) -> list[Switch]:
    """Every switch on provider strings in one module's source."""
    tree = ast.parse(source)
    skip = _table_values(tree, file) | _literal_types(tree)
    functions: dict[int, str] = {}  # node -> its innermost enclosing function
    for node in ast.walk(tree):  # breadth first: an outer function before its inner ones
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for child in ast.walk(node):
                if child is not node:
                    functions[id(child)] = node.name
    found: list[Switch] = []
    counted: set[int] = set()

    def add(node: ast.AST, what: str) -> None:
        for child in ast.walk(node):
            counted.add(id(child))
        line = getattr(node, "lineno", 0)
        found.append(Switch(file, line, functions.get(id(node), ""), what))

    for node in ast.walk(tree):
        if id(node) in skip or id(node) in counted:
            continue
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_named(o) or _names_in(o) for o in operands):
                add(node, "a comparison with a provider's name")
        elif isinstance(node, ast.Match):
            values = [
                child
                for case in node.cases
                for child in ast.walk(case.pattern)
                if isinstance(child, ast.MatchValue) and _named(child.value)
            ]
            if values:
                add(node, "a match on a provider's name")
        elif isinstance(node, ast.Dict):
            if sum(key is not None and _named(key) for key in node.keys) >= 2:
                add(node, "a dict literal keyed by providers' names")
        elif _names_in(node) >= 2:
            add(node, "a literal listing providers' names")
    return sorted(found, key=lambda s: s.line)


@functools.cache
def switches() -> tuple[Switch, ...]:
    """Every switch on provider strings in the client, in file and line order (read once a
    session: two checks share it)."""
    found: list[Switch] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        file = path.relative_to(PACKAGE).as_posix()
        if file == TABLE or file.split("/")[0] == EMULATOR:
            continue
        found += switches_in(path.read_text(encoding="utf-8"), file)
    return tuple(sorted(found, key=lambda s: (s.file, s.line)))


def test_switches_on_provider_strings_are_at_most_the_allowed_ones() -> None:
    """Outside the provider table and its subtables, only the allowed places (at most three)
    compare, match or list provider strings."""
    found = switches()
    unexpected = [str(s) for s in found if (s.file, s.function) not in ALLOWED]
    assert not unexpected, (
        "read the provider table (vertexbatch/_providers.py: PROVIDERS, by_command, of_model) "
        "instead of switching on a provider's name, or add a column to it:\n"
        + "\n".join(unexpected)
    )
    assert len(ALLOWED) <= MOST_ALLOWED
    assert len(found) <= MOST_ALLOWED, "\n".join(map(str, found))


def test_every_allowed_switch_still_exists() -> None:
    """An allowed switch that is gone leaves the list, so that none comes back unseen."""
    seen = {(s.file, s.function) for s in switches()}
    assert set(ALLOWED) <= seen, set(ALLOWED) - seen


def test_each_subtable_has_the_table_s_rows() -> None:
    """A subtable is keyed by exactly the table's providers (or its commands), in its order."""
    for (file, name), module in SUBTABLES.items():
        keys = tuple(getattr(importlib.import_module(module), name))
        assert keys in (tuple(PROVIDERS), COMMANDS), (file, name, keys)


def test_the_guard_sees_each_kind_of_switch() -> None:
    """Each kind of switch is counted once, named by its line; a provider's name passed as an
    argument, a Literal type and a subtable are not."""
    source = "\n".join(
        [
            "def f(provider, name, row):",  # 1
            '    if provider == "anthropic":',  # 2
            "        pass",  # 3
            '    x = name != "gemini"',  # 4
            '    ok = provider not in ("anthropic", "google")',  # 5
            "    match provider:",  # 6
            '        case "google":',  # 7
            "            pass",  # 8
            '    live = {"anthropic": 4, "google": 16}',  # 9
            '    for n in ("claude", "gemini"):',  # 10
            "        pass",  # 11
            '    check(row, "anthropic")',  # 12: an argument
            'P = Literal["anthropic", "google"]',  # 13: a type
            'FAMILIES = {"anthropic": "claude", "google": "gemini"}',  # 14: a subtable
        ]
    )
    found = switches_in(source, "_rules.py")
    assert [(s.line, s.function) for s in found] == [
        (2, "f"),
        (4, "f"),
        (5, "f"),
        (6, "f"),
        (9, "f"),
        (10, "f"),
    ]
