"""The input rules of Vertex's BigQuery-style importer, checked before anything is uploaded.

Vertex imports batch input through an importer that fails the *whole job* (error code 3,
"Failed to import data") on any line it cannot store; catching those lines here turns an
hours-later job failure into an immediate ``InvalidRequestError`` naming the field.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_DEPTH", "import_problem", "scan"]

MAX_DEPTH = 15


def scan(value: Any) -> tuple[str | None, bool, bool]:
    """Check a line in one walk: what the importer would reject, and what it is made of.

    Returns ``(problem, canonical, plain)``:

    - ``problem`` describes the first part the importer would reject, or is ``None``: an empty
      object anywhere (``{}``), nesting deeper than 15 levels, keys that break BigQuery column
      names (starting with ``$``, containing a space, or empty);
    - ``canonical``: no null, no empty list and no integral float, so the value serialises to its
      own canonical form (see ``_lines.canonical_digest``);
    - ``plain``: every node is JSON data (``False`` for a pydantic model, say: convert, scan again).

    One walk does all three because every one of up to 200,000 lines goes through here.
    """
    canonical = plain = True
    # The fast walk carries no paths; a line with a problem is walked again to name the place.
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        kind = type(node)
        if kind is dict:
            if depth > MAX_DEPTH or not node:
                return _problem(value), False, plain
            for k, v in node.items():
                if not k or k[0] == "$" or " " in k:
                    return _problem(value), False, plain
                if type(v) not in _LEAVES:
                    stack.append((v, depth + 1))
        elif kind is list:
            if depth > MAX_DEPTH:
                return _problem(value), False, plain
            canonical = canonical and bool(node)
            for v in node:
                if type(v) not in _LEAVES:
                    stack.append((v, depth + 1))
        elif node is None or (kind is float and node.is_integer()):
            canonical = False
        elif kind is not float:
            plain = False
    return None, canonical, plain


def _problem(value: Any) -> str:
    """Name the first place in ``value`` the importer rejects (the slow walk, with paths)."""
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        node, path, depth = stack.pop()
        if type(node) is dict:
            if depth > MAX_DEPTH:
                return f"{path or 'the line'} nests deeper than {MAX_DEPTH} levels"
            if not node:
                return (
                    f"{path or 'the line'} is an empty object, which Vertex's importer rejects "
                    "(it fails the whole job): drop it or give it a field"
                )
            for k, v in node.items():
                if not k or k[0] == "$" or " " in k:
                    return f"key {k!r} at {path or 'top level'} is not a valid column name"
                stack.append((v, f"{path}.{k}" if path else k, depth + 1))
        elif type(node) is list:
            if depth > MAX_DEPTH:
                return f"{path} nests deeper than {MAX_DEPTH} levels"
            stack.extend((v, f"{path}[{i}]", depth + 1) for i, v in enumerate(node))
    return "it breaks the importer's rules"  # pragma: no cover - scan found a problem


# Leaves that are always importable and canonical: skipped without a stack entry.
_LEAVES = frozenset({str, int, bool})


def import_problem(value: Any) -> str | None:
    """Describe the first part of a JSON value the importer would reject, or return ``None``."""
    return scan(value)[0]
