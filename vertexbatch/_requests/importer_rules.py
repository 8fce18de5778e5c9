"""The input rules of Vertex's BigQuery-style importer, checked before anything is uploaded.

Vertex imports batch input through an importer that fails the *whole job* (error code 3,
"Failed to import data") on any line it cannot store; catching those lines here turns an
hours-later job failure into an immediate ``InvalidRequestError`` naming the field.

The importer is BigQuery-style (reference ``vertex-batch-wire.md`` §1.1): one schema for the
whole file, and a field's type is fixed by the lines it reads (``_requests.importer_types``). The
reference says a line "nesting deeper than 15 levels" fails, and does not say lists are exempt:
every list and object counts, the request itself is level 1, and 15 levels are allowed. The local
stack's importer (``vertexbatch/emulator/_importer.py``) counts the same way.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Mapping
from typing import Any

__all__ = [
    "LARGEST",
    "MAX_DEPTH",
    "SPACE",
    "Problem",
    "documented_names",
    "has_huge_int",
    "import_problem",
    "keys_are_strings",
    "problem",
    "scan",
]

MAX_DEPTH = 15
"""Levels of nested lists and objects in a request (the request itself is level 1)."""

LARGEST = int(sys.float_info.max)
"""The largest integer a line may hold in size: the largest 64-bit float (about 1.8e308). Past it
no JSON reader of Vertex's holds the number (``problem`` says so), and Python cannot make it a
float: a plan's arithmetic would fail on it."""

# A key the importer cannot store as a column name: empty, starting with "$", or with whitespace
# (any Unicode whitespace, as ``str.isspace`` has it).
SPACE = re.compile(r"\s").search


def scan(value: Any) -> tuple[bool, bool, bool, bool]:
    """Check a line in one walk: whether it breaks a rule, and what it is made of.

    Returns ``(bad, canonical, plain, fixed)``:

    - ``bad``: some part would make the importer reject the line: an empty object anywhere
      (``{}``), a ``null`` inside a list, nesting deeper than 15 levels (lists and objects), a
      key that is not a string or breaks BigQuery column names (empty, starting with ``$``,
      containing whitespace); ``problem`` names it;
    - ``canonical``: no null, no empty list and no integral float, so the value serialises to its
      own canonical form (see ``_requests.lines.canonical_digest``);
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
                    elif not k or k[0] == "$" or SPACE(k):
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
                if importer and (not k or k[0] == "$" or SPACE(k)):
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
            if not -LARGEST <= node <= LARGEST:
                return top, path, _LARGE
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
_LARGE = (
    "a number past 1.8e308 in size, which no number type of Vertex's importer holds (BigQuery's "
    "INT64, FLOAT64 and BIGNUMERIC stop far below; no model takes one)"
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


def has_huge_int(value: Any) -> bool:
    """Whether an integer past ``LARGEST`` in size is in ``value`` (JSON data, ``scan``ned: a
    bounded depth). Only lines orjson could not write are walked for it (``_requests.lines``):
    orjson refuses every integer past 64 bits, so the usual line needs no walk."""
    stack = [value]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is dict:
            stack.extend(node.values())
        elif kind is list:
            stack.extend(node)
        elif kind is int and not -LARGEST <= node <= LARGEST:
            return True
    return False


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
