"""The input rules of Vertex's BigQuery-style importer, checked before anything is uploaded.

Vertex imports batch input through an importer that fails the *whole job* (error code 3,
"Failed to import data") on any line it cannot store; catching those lines here turns an
hours-later job failure into an immediate ``InvalidRequestError`` naming the field.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_DEPTH", "import_problem"]

MAX_DEPTH = 15


def import_problem(value: Any) -> str | None:
    """Describe the first part of a JSON value the importer would reject, or return ``None``.

    Rejected: an empty object anywhere (``{}``), nesting deeper than 15 levels, and keys that
    break BigQuery column names (starting with ``$``, containing a space, or empty).
    """
    # Iterative walk: 200,000 lines go through here.
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, dict):
            if depth > MAX_DEPTH:
                return f"{path or 'the line'} nests deeper than {MAX_DEPTH} levels"
            if not node:
                return (
                    f"{path or 'the line'} is an empty object, which Vertex's importer rejects "
                    "(it fails the whole job): drop it or give it a field"
                )
            for k, v in node.items():
                if not k or k.startswith("$") or " " in k:
                    return f"key {k!r} at {path or 'top level'} is not a valid column name"
                stack.append((v, f"{path}.{k}" if path else k, depth + 1))
        elif isinstance(node, list):
            if depth > MAX_DEPTH:
                return f"{path} nests deeper than {MAX_DEPTH} levels"
            for i, v in enumerate(node):
                stack.append((v, f"{path}[{i}]", depth + 1))
    return None
