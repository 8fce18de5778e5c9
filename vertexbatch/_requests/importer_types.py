"""The type of each field across one input's lines, as Vertex's importer fixes it (pure).

The importer reads the whole file into one schema (``vertex-batch-wire.md`` §1.1): a field, by its
path (list items all at one path), that holds a string on one line and a list or a number on
another fails the whole job. ``FieldTypes`` remembers each field's type as lines are built and
names the first clash; the single-line rules it checks on the way are
``_requests.importer_rules``'s.
"""

from __future__ import annotations

import copy
from typing import Any

from .importer_rules import MAX_DEPTH, SPACE, Problem, documented_names, scan

__all__ = ["FieldTypes"]


# The JSON type of a value as the importer fixes a field's type (null fits any: not here).
_OBJECT = "an object"
_LIST = "a list"
_STRING = "a string"
_NUMBER = "a number"  # an integer and a float are both numbers to the importer
_BOOLEAN = "a boolean"
_KINDS: dict[type, str] = {
    dict: _OBJECT,
    list: _LIST,
    str: _STRING,
    int: _NUMBER,
    float: _NUMBER,
    bool: _BOOLEAN,
}
_MISSING = object()
# Separators of a field's path in the schema: not characters of any key the importer accepts.
_KEY_STEP = "\x00"
_ITEM_STEP = "\x01"


class FieldTypes:
    """The type of each field across one input's lines, as Vertex's importer fixes it.

    The importer reads the whole file into one schema: a field (by its path, list items all at
    one path) that holds a string on one line and a list or a number on another fails the whole
    job ("Repeated field must be imported as a JSON array"). ``add`` each line's request in
    order; it names the first field whose type differs from an earlier line's. ``null`` fits any
    type. Memory grows with the number of distinct field paths, not with the lines.
    """

    __slots__ = ("_lines", "_made", "_root", "_shared")

    def __init__(self) -> None:
        self._lines = 0
        # The schema as a tree: one entry per field path, [type, line it was first seen on, that
        # line's key, path, fields by name (objects), entry of the items (lists)]. Looking a
        # field up by name in its parent's entry costs no string building per field.
        self._root: list[Any] | None = None
        # Where the line the last ``check`` recorded created entries, for ``undo``: (fields,
        # name) of an object's field, (entry, None) of a list's items, (None, None) of the root;
        # None when it recorded nothing.
        self._made: list[tuple[Any, str | None]] | None = None
        # Shared values (``check``'s ``shared``) recorded under the request's field of that
        # name: the value (held, so its id is not reused), and its scan's canonical and fixed.
        self._shared: dict[str, tuple[Any, bool, bool]] = {}

    def check(
        self, request: Any, key: str, shared: tuple[str, ...] = ()
    ) -> tuple[bool, bool, bool, bool, Problem | None]:
        """``scan(request)`` and ``add(request, key)`` in one walk: every line comes here.

        Returns ``scan``'s four answers and ``add``'s first clash, exactly as the two walks give
        them (tests/requests/test_fast_paths.py compares them) for a request that is an object (or a
        list). The line stays recorded only when it is plain, not bad and clashes with nothing;
        any other line leaves nothing behind. A caller that refuses a recorded line for a reason
        found later calls ``undo``. Whether a line has a clash does not depend on the order of
        the walk, which clash is named first does: a line with one (rare: it is refused) is
        walked again by ``add``, on a copy of the schema, to name it.

        ``shared``: fields of the request whose values the caller shares between lines and
        never modifies (a config's parts, say). Such a value, once recorded under the same
        field, is not walked again: it has no clash and creates no field, its keys passed, and
        its scan is known.
        """
        if type(request) is not dict and type(request) is not list:
            self._made = None  # not a request (an object): nothing to record
            return (*scan(request), None)
        skip: set[str] | None = None
        canonical = plain = fixed = True
        if shared and type(request) is dict:
            for field in shared:
                seen = self._shared.get(field)
                if seen is not None and seen[0] is request.get(field, _MISSING):
                    skip = {field} if skip is None else skip | {field}
                    canonical = canonical and seen[1]
                    fixed = fixed and seen[2]
        self._lines += 1
        line = self._lines
        made: list[tuple[Any, str | None]] = []
        self._made = made
        space = SPACE
        string, number, boolean, obj, array = _STRING, _NUMBER, _BOOLEAN, _OBJECT, _LIST
        # Whether some field's type differs from an earlier one's; which clash ``add`` names
        # first depends on its order, so a line with one is walked again by ``add`` to name it.
        clash = False
        kind = obj if type(request) is dict else array
        root = self._root
        if root is None:
            root = self._root = [kind, line, key, "", {}, None]
            made.append((None, None))
        elif root[0] is not kind:
            clash = True
        # (node, its entry, depth): lists and objects, their entries found where they are met;
        # leaves are checked there too.
        stack: list[tuple[Any, list[Any], int]] = [(request, root, 1)]
        while stack:
            node, entry, depth = stack.pop()
            if depth > MAX_DEPTH:
                self.undo()
                return True, False, plain, fixed, None
            kind = obj if type(node) is dict else array
            if kind is obj:
                if not node:
                    self.undo()
                    return True, False, plain, fixed, None
                fields = entry[4]
                for k, v in node.items():
                    # Nearly every key is an identifier, which passes every rule in one call.
                    if type(k) is not str or not k.isidentifier():
                        if type(k) is not str:
                            if not isinstance(k, str):
                                self.undo()
                                return True, False, plain, fixed, None  # json writes 1 as "1"
                            plain = False  # a str subclass: converted to str, checked again
                            k = str.__str__(k)
                        elif not k or k[0] == "$" or space(k):
                            self.undo()
                            return True, False, plain, fixed, None
                    cls = type(v)
                    if cls is str:
                        leaf = string
                    elif cls is dict or cls is list:
                        if skip is not None and depth == 1 and k in skip:
                            continue
                        kind = obj if cls is dict else array
                        found = fields.get(k)
                        if found is None:
                            path = entry[3] + _KEY_STEP + k
                            found = fields[k] = [kind, line, key, path, {}, None]
                            made.append((fields, k))
                        elif found[0] is not kind:
                            clash = True
                        stack.append((v, found, depth + 1))
                        continue
                    elif cls is int:
                        leaf = number
                    elif cls is bool:
                        leaf = boolean
                    elif cls is float:
                        leaf = number
                        if v.is_integer():
                            canonical = False
                        if v and not 1e-4 <= abs(v) < 1e16:  # NaN too: it compares False
                            fixed = False
                    elif v is None:
                        canonical = False  # and fits any type
                        continue
                    else:
                        plain = False
                        continue
                    found = fields.get(k)
                    if found is None:
                        fields[k] = [leaf, line, key, entry[3] + _KEY_STEP + k, {}, None]
                        made.append((fields, k))
                    elif found[0] is not leaf:
                        clash = True
            else:
                canonical = canonical and bool(node)
                for v in node:
                    cls = type(v)
                    if cls is str:
                        leaf = string
                    elif cls is dict or cls is list:
                        kind = obj if cls is dict else array
                        found = entry[5]
                        if found is None:
                            found = entry[5] = [kind, line, key, entry[3] + _ITEM_STEP, {}, None]
                            made.append((entry, None))
                        elif found[0] is not kind:
                            clash = True
                        stack.append((v, found, depth + 1))
                        continue
                    elif cls is int:
                        leaf = number
                    elif cls is bool:
                        leaf = boolean
                    elif cls is float:
                        leaf = number
                        if v.is_integer():
                            canonical = False
                        if v and not 1e-4 <= abs(v) < 1e16:
                            fixed = False
                    elif v is None:
                        self.undo()
                        return True, False, plain, fixed, None  # "Only optional fields ... NULL"
                    else:
                        plain = False
                        continue
                    found = entry[5]
                    if found is None:
                        entry[5] = [leaf, line, key, entry[3] + _ITEM_STEP, {}, None]
                        made.append((entry, None))
                    elif found[0] is not leaf:
                        clash = True
        if not plain or clash:
            self.undo()
        if not clash or not plain:
            if plain and shared and type(request) is dict and (not skip or len(skip) < len(shared)):
                self._remember(request, shared, skip)
            return False, canonical, plain, fixed, None
        # ``add``'s first clash, on a copy of the schema: this line leaves nothing behind.
        root, lines = self._root, self._lines
        self._root = copy.deepcopy(root)
        try:
            found = self.add(request, key)
        finally:
            self._root, self._lines = root, lines
        return False, canonical, True, fixed, found

    def _remember(self, request: dict[str, Any], shared: tuple[str, ...], skip: Any) -> None:
        """Note the shared values this recorded line walked, with their scan (once each)."""
        for name in shared:
            value = request.get(name, _MISSING)
            if (skip is None or name not in skip) and (type(value) is dict or type(value) is list):
                _, canonical, _, fixed = scan(value)  # plain and not bad: the line is
                self._shared[name] = value, canonical, fixed

    def undo(self) -> None:
        """Forget the line the last ``check`` recorded (it was refused after all)."""
        made, self._made = self._made, None
        if made is None:
            return
        self._lines -= 1
        self._shared.clear()  # what it noted may lean on fields it created
        for where, name in reversed(made):
            if where is None:
                self._root = None
            elif name is None:
                where[5] = None
            else:
                del where[name]

    def add(self, request: Any, key: str) -> Problem | None:
        """Record one line's request (plain JSON data, already checked by ``scan``).

        Returns:
            ``None``, or the first field whose type differs from an earlier line's, as
            ``(top, place, rule)``: the place by documented names and positions in this
            request, the rule naming both types, both lines (counted from 1) and both keys.
        """
        self._lines += 1
        line = self._lines
        kinds = _KINDS
        # (node, parent entry, field name; None for a list's item): lists and objects are
        # checked when popped, leaves where they are met, in the order of the first version.
        stack: list[tuple[Any, list[Any] | None, str | None]] = [(request, None, None)]
        while stack:
            node, parent, name = stack.pop()
            kind = kinds[type(node)]
            if parent is None:
                entry = self._root
                if entry is None:
                    entry = self._root = [kind, line, key, "", {}, None]
            elif name is None:
                entry = parent[5]
                if entry is None:
                    entry = parent[5] = [kind, line, key, parent[3] + _ITEM_STEP, {}, None]
            else:
                entry = parent[4].get(name)
                if entry is None:
                    path = parent[3] + _KEY_STEP + name
                    entry = parent[4][name] = [kind, line, key, path, {}, None]
            if entry[0] is not kind:
                return _clash(request, entry[3], kind, (entry[0], entry[1], entry[2]), line, key)
            if kind is _OBJECT:
                fields = entry[4]
                for field_name, value in node.items():
                    cls = type(value)
                    if cls is dict or cls is list:
                        stack.append((value, entry, field_name))
                        continue
                    leaf = kinds.get(cls)  # None: null, which fits any type
                    if leaf is not None:
                        found = fields.get(field_name)
                        if found is None:
                            path = entry[3] + _KEY_STEP + field_name
                            fields[field_name] = [leaf, line, key, path, {}, None]
                        elif found[0] is not leaf:
                            first = (found[0], found[1], found[2])
                            return _clash(request, found[3], leaf, first, line, key)
            else:
                for value in node:
                    cls = type(value)
                    if cls is dict or cls is list:
                        stack.append((value, entry, None))
                        continue
                    leaf = kinds.get(cls)
                    if leaf is not None:
                        found = entry[5]
                        if found is None:
                            entry[5] = [leaf, line, key, entry[3] + _ITEM_STEP, {}, None]
                        elif found[0] is not leaf:
                            first = (found[0], found[1], found[2])
                            return _clash(request, found[3], leaf, first, line, key)
        return None


def _clash(
    request: Any, path: str, kind: str, first: tuple[str, int, str], line: int, key: str
) -> Problem:
    """The problem of a field whose type differs between lines, placed in this request."""
    first_kind, first_line, first_key = first
    top, place = _place_of(request, path, kind)
    if first_line == line:
        where = f"{kind} here but {first_kind} elsewhere in the same request (line {line})"
    else:
        where = (
            f"{kind} on line {line} (request {key!r}) but {first_kind} on line {first_line} "
            f"(request {first_key!r})"
        )
    rule = (
        f"{where}; Vertex's importer fixes each field's type from the lines it reads and fails "
        "the whole job when they differ: give it one type everywhere"
    )
    return top, place, rule


def _place_of(request: Any, path: str, kind: str) -> tuple[str, str]:
    """(top, place) of the first node at schema ``path`` of type ``kind`` in ``request``."""
    known = documented_names()
    stack: list[tuple[Any, str, str, str]] = [(request, "", "", "")]
    while stack:
        node, schema, top, place = stack.pop()
        if schema == path and _KINDS.get(type(node)) == kind:
            return top, place
        if not path.startswith(schema):
            continue
        if type(node) is dict:
            items = []
            for n, (k, v) in enumerate(node.items(), start=1):
                name = k if k in known else f"<field {n}>"
                where = f"{place}.{name}" if place else name
                items.append((v, f"{schema}{_KEY_STEP}{k}", top or name, where))
            stack.extend(reversed(items))
        elif type(node) is list:
            item = schema + _ITEM_STEP
            stack.extend(reversed([(v, item, top, f"{place}[{i}]") for i, v in enumerate(node)]))
    return "", ""
