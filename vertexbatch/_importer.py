"""The input rules of Vertex's BigQuery-style importer, checked before anything is uploaded.

Vertex imports batch input through an importer that fails the *whole job* (error code 3,
"Failed to import data") on any line it cannot store; catching those lines here turns an
hours-later job failure into an immediate ``InvalidRequestError`` naming the field.

The importer is BigQuery-style (reference ``vertex-batch-wire.md`` §1.1): one schema for the
whole file, and a field's type is fixed by the lines it reads (``FieldTypes``). The reference
says a line "nesting deeper than 15 levels" fails, and does not say lists are exempt: every list
and object counts, the request itself is level 1, and 15 levels are allowed. The local stack's
importer (``vertexbatch/emulator/_importer.py``) counts the same way.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "FieldTypes",
    "Problem",
    "documented_names",
    "import_problem",
    "keys_are_strings",
    "problem",
    "scan",
]

MAX_DEPTH = 15
"""Levels of nested lists and objects in a request (the request itself is level 1)."""

# A key the importer cannot store as a column name: empty, starting with "$", or with whitespace
# (any Unicode whitespace, as ``str.isspace`` has it).
_SPACE = re.compile(r"\s").search


def scan(value: Any) -> tuple[bool, bool, bool, bool]:
    """Check a line in one walk: whether it breaks a rule, and what it is made of.

    Returns ``(bad, canonical, plain, fixed)``:

    - ``bad``: some part would make the importer reject the line: an empty object anywhere
      (``{}``), a ``null`` inside a list, nesting deeper than 15 levels (lists and objects), a
      key that is not a string or breaks BigQuery column names (empty, starting with ``$``,
      containing whitespace); ``problem`` names it;
    - ``canonical``: no null, no empty list and no integral float, so the value serialises to its
      own canonical form (see ``_lines.canonical_digest``);
    - ``plain``: every node is JSON data of the exact built-in types (``False`` for a pydantic
      model or a ``str`` subclass, say: convert, scan again; still ``False`` after converting
      means some node is not JSON data at all);
    - ``fixed``: every float is 0 or between 1e-4 and 1e16 in size, which ``json`` writes without
      an exponent, and so does orjson, alike (outside that range they differ: ``1e-05`` and
      ``0.00001``); ``False`` for NaN and Infinity too.

    NaN, Infinity and strings that are not UTF-8 are left to the strict encoder that writes the
    line. One walk does all this because every one of up to 200,000 lines goes through here.
    """
    canonical = plain = fixed = True
    # The fast walk carries no paths; a line with a problem is walked again to name the place.
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        kind = type(node)
        if kind is dict:
            if depth > MAX_DEPTH or not node:
                return True, False, plain, fixed
            for k, v in node.items():
                # Nearly every key is an identifier, which passes every rule in one call.
                if type(k) is not str or not k.isidentifier():
                    if type(k) is not str:
                        if not isinstance(k, str):
                            return True, False, plain, fixed  # json.dumps would write 1 as "1"
                        plain = False  # a str subclass: converted to str, then scanned again
                    elif not k or k[0] == "$" or _SPACE(k):
                        return True, False, plain, fixed
                if type(v) not in _LEAVES:
                    stack.append((v, depth + 1))
        elif kind is list:
            if depth > MAX_DEPTH:
                return True, False, plain, fixed
            canonical = canonical and bool(node)
            for v in node:
                if type(v) not in _LEAVES:
                    if v is None:
                        return True, False, plain, fixed  # "Only optional fields ... NULL"
                    stack.append((v, depth + 1))
        elif kind is float:
            if node.is_integer():
                canonical = False
            if node and not 1e-4 <= abs(node) < 1e16:  # NaN too: it compares False
                fixed = False
        elif node is None:
            canonical = False
        else:
            plain = False
    return False, canonical, plain, fixed


# (top, place, rule): the request's top-level field the place is under ("" for the request
# itself), the place by documented field names and positions, and the rule it breaks.
Problem = tuple[str, str, str]


def problem(value: Any, *, importer: bool = True) -> Problem | None:
    """Name the first place in a line's request that breaks a rule (the slow walk, with paths).

    Covers what ``scan`` finds and what the strict encoder refuses (NaN and Infinity, strings
    that are not UTF-8, integers too long to write, values that are not JSON data); with
    ``importer=False`` only the latter and the depth (for a part of a request, such as a config,
    that may hold an empty object or a key the wire form renames). The place is named only by
    documented field names (Anthropic Messages, google-genai), list positions ``[i]`` and
    ``<field N>`` (the N-th key of its object, from 1) for any other key: never by content,
    keys included.
    """
    known = documented_names()
    stack: list[tuple[Any, str, str, int]] = [(value, "", "", 1)]
    while stack:
        node, top, path, depth = stack.pop()
        kind = type(node)
        if kind is dict or kind is list:
            if depth > MAX_DEPTH:
                return top, path, _DEEP
            if kind is list:
                for i, v in enumerate(node):
                    if v is None and importer:
                        return top, f"{path}[{i}]", _NULL_IN_LIST
                items = [(v, top, f"{path}[{i}]", depth + 1) for i, v in enumerate(node)]
                stack.extend(reversed(items))
                continue
            if not node and importer:
                return top, path, _EMPTY
            items = []
            for n, (k, v) in enumerate(node.items(), start=1):
                name = k if type(k) is str and k in known else f"<field {n}>"
                where = f"{path}.{name}" if path else name
                if type(k) is not str:
                    return top or name, where, f"a key of type {type(k).__name__}, {_NOT_STR}"
                if importer and (not k or k[0] == "$" or _SPACE(k)):
                    return top or name, where, _COLUMN
                if not _utf8(k):
                    return top or name, where, f"a key that is {_NOT_UTF8}"
                items.append((v, top or name, where, depth + 1))
            stack.extend(reversed(items))
        elif kind is float:
            if node != node or node in (_INF, -_INF):
                return top, path, "not JSON: NaN/Infinity are not JSON numbers"
        elif kind is str:
            if not _utf8(node):
                return top, path, f"not JSON: {_NOT_UTF8}"
        elif kind is int:
            try:
                int.__repr__(node)
            except ValueError:
                return top, path, "not JSON: an integer too long to write (over 4300 digits)"
        elif kind is not bool and node is not None:
            return top, path, f"a value of type {kind.__name__}, which is not JSON data"
    return None


# The rules, as messages say them (those about the importer name it).
_DEEP = (
    f"nested deeper than {MAX_DEPTH} levels (lists and objects), which Vertex's importer rejects"
)
_NULL_IN_LIST = (
    "null inside a list, which Vertex's importer rejects (it fails the whole job: 'Only optional "
    "fields can be set to NULL'): drop it"
)
_EMPTY = (
    "an empty object, which Vertex's importer rejects (it fails the whole job): drop it or give "
    "it a field"
)
_COLUMN = (
    "a key that is not a valid column name for Vertex's importer (empty, starting with '$' or "
    "containing whitespace)"
)
_NOT_STR = "not a string: JSON keys are strings"
_NOT_UTF8 = "not UTF-8 text (a lone surrogate)"
_INF = float("inf")


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def keys_are_strings(value: Any) -> bool:
    """Whether every mapping key in ``value`` is a string, within ``MAX_DEPTH`` levels.

    ``json.dumps`` writes an int, float, bool or None key as a string without a word: a value
    about to be serialised as a whole (a dict config) is checked here first. ``False`` past
    ``MAX_DEPTH`` levels too (too deep to stage; a cycle ends there).
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            return False
        if isinstance(node, Mapping):
            for k, v in node.items():
                if type(k) is not str and not isinstance(k, str):
                    return False
                if type(v) not in _LEAVES and not isinstance(v, _SCALARS):
                    stack.append((v, depth + 1))
        elif isinstance(node, list | tuple):
            stack.extend(
                (v, depth + 1)
                for v in node
                if type(v) not in _LEAVES and not isinstance(v, _SCALARS)
            )
    return True


_SCALARS = (str, int, float, type(None))


@functools.cache
def documented_names() -> frozenset[str]:
    """Field names an error message may show: Anthropic Messages and google-genai fields.

    Any other mapping key in a request is the caller's content (a tool's property names, the
    arguments of a function call, a label) and is shown by position instead.
    """
    import pydantic
    from google.genai import types as genai_types

    names = set(_ANTHROPIC_NAMES.split())
    for item in vars(genai_types).values():
        if isinstance(item, type) and issubclass(item, pydantic.BaseModel):
            for field_name, info in item.model_fields.items():
                names.add(field_name)
                if info.alias:
                    names.add(info.alias)
    return frozenset(names)


# Fields of the Anthropic Messages API request (and the JSON Schema words of tool schemas).
_ANTHROPIC_NAMES = """
    anthropic_version anthropic_beta model messages max_tokens system metadata user_id
    stop_sequences stream temperature top_k top_p tools tool_choice thinking budget_tokens
    display service_tier container context_management edits trigger keep clear_at_least
    clear_tool_inputs exclude_tools mcp_servers authorization_token tool_configuration enabled
    allowed_tools output_config output_format effort format schema inference_geo
    role content type text cache_control ttl citations source media_type data url file_id id
    name input tool_use_id is_error signature title context start_char_index end_char_index
    cited_text document_index document_title start_page_number end_page_number
    start_block_index end_block_index search_result_index encrypted_content encrypted_index
    page_age server_name description input_schema strict max_uses allowed_domains
    blocked_domains user_location city region country timezone display_width_px
    display_height_px display_number defer_loading allowed_callers input_examples
    disable_parallel_tool_use properties required items enum additionalProperties $defs
    definitions $ref $schema anyOf oneOf allOf not const default minimum maximum
    exclusiveMinimum exclusiveMaximum minItems maxItems minLength maxLength pattern nullable
    examples uniqueItems multipleOf
"""


# Leaves that are always importable and canonical: skipped without a stack entry.
_LEAVES = frozenset({str, int, bool})


def import_problem(value: Any) -> str | None:
    """Describe the first part of a JSON value a line could not hold, or return ``None``."""
    found = problem(value)
    return None if found is None else f"{found[1] or 'the request'}: {found[2]}"


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
        them (tests/test_fast_paths.py compares them) for a request that is an object (or a
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
        space = _SPACE
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
