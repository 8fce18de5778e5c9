"""Reading untrusted JSON from output lines, within fixed bounds (pure).

An output line is written by a service this package does not control, and may be damaged. Every
reader of one keeps to these bounds, so one damaged line costs time in proportion to its length
and never exhausts the stack:

- ``load_json`` refuses text nested deeper than ``MAX_DEPTH`` before parsing it (``too_deep``
  tells whether a JSON value inside a longer text could);
- wrappers (a JSON string holding JSON, ``{"body": ...}``, ``{"error": ...}``) are looked through
  at most ``MAX_UNWRAP`` levels deep;
- a string is read as a number only when ``int()`` reads it cheaply (``is_number``).

An output line is parsed by orjson when that gives what ``json.loads`` gives: orjson reads every
JSON text as json does, except that it reads integers outside 64 bits as floats (json: exact
integers) and refuses what json also accepts (NaN, Infinity, lone surrogates, a byte-order mark,
numbers too large for a float). A line with a run of 19 or more digits anywhere goes to json
(an integer outside 64 bits has at least 19 digits), and so does every line orjson refuses: the
value, or the error, is json's (``tests/requests/test_fast_paths.py``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from decimal import Decimal
from itertools import accumulate, takewhile
from typing import Any, Final

import orjson

__all__ = ["MAX_DEPTH", "MAX_UNWRAP", "is_number", "load_exact", "load_json", "too_deep"]

MAX_DEPTH: Final = 128
"""The deepest nesting of arrays and objects read from an output line or a JSON string in it.

Vertex's importer refuses requests nested deeper than 15 levels; responses may nest deeper (tool
input is the model's own JSON), but nothing legitimate comes near this.
"""

# The largest nesting of wrappers looked through: response → JSON string → body → JSON string.
MAX_UNWRAP: Final = 6

# A string read as a number has at most this many digits (int() refuses past 4,300).
_MAX_DIGITS: Final = 19

# For measuring nesting: a JSON string (to its closing quote, or to the end of an unterminated
# one) once escaped backslashes and quotes are gone, then +1 per opening and -1 per closing bracket.
_JSON_STRING: Final = re.compile(rb'"[^"]*"?')
_BRACKET_STEPS: Final = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_NOT_BRACKETS: Final = bytes(b for b in range(256) if b not in b"[]{}")
# For the orjson path: every digit becomes 0 (opening brackets are deleted: that only joins runs,
# never splits one), and a run this long may be an integer orjson would read as a float.
_DIGITS_AS_ZERO: Final = bytes(48 if 48 <= b <= 57 else b for b in range(256))
_LONG_DIGITS: Final = b"0" * 19
# The scanner ``json.loads`` uses (same options): the value at an index and where it ends.
_SCAN: Final[Callable[[str, int], tuple[Any, int]]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def load_json(text: str | bytes) -> Any:
    """``json.loads``, refusing text nested deeper than ``MAX_DEPTH`` before parsing it.

    Bytes must be UTF-8 (a leading byte-order mark is allowed). Counting brackets is the only
    extra cost for usual text; the nesting is measured only when there are more opening brackets
    than ``MAX_DEPTH``, in time linear in the text's length.

    Raises:
        ValueError: the text is not UTF-8, is not JSON, or nests too deeply.
    """
    if isinstance(text, str):
        deep = too_deep(text)
    else:
        # One pass that drops the opening brackets (a little cheaper than counting each kind)
        # and marks digits for the orjson path.
        marked = text.translate(_DIGITS_AS_ZERO, b"[{")
        deep = len(text) - len(marked) > MAX_DEPTH
        if not deep and _LONG_DIGITS not in marked:
            try:
                return orjson.loads(text)
            except orjson.JSONDecodeError:  # json reads it, or says why not: below
                pass
        deep = deep and _nesting(text) > MAX_DEPTH
        text = text.decode("utf-8", "surrogatepass")  # as json.loads does, but UTF-8 only
        if text[:1] == "\ufeff":
            text = text[1:]
    if deep:
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
    if text[:1] == "{" and text[-1:] == "}":
        # The usual line, one object and no whitespace around it: json.loads' own scanner,
        # without its wrapper's work; anything else (and its error message) from json.loads.
        try:
            value, end = _SCAN(text, 0)
        except StopIteration:  # a value expected somewhere: json.loads says where, below
            pass
        else:
            if end == len(text):
                return value
    return json.loads(text)


def load_exact(text: str) -> Any:
    """``load_json`` for a model's own JSON text (a ``schema=`` answer), reading a number past a
    float's range as the exact integer it is when it is whole and an int can be written as text
    (Python's limit, 4,300 digits by default), else as json reads a float past its range (an
    infinity of the number's sign), never an error.

    Raises:
        ValueError: the text is not JSON, or nests too deeply.
    """
    if too_deep(text):
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
    return _EXACT.decode(text)


def _exact_float(text: str) -> Any:
    value = float(text)
    if not math.isinf(value):
        return value
    exact = Decimal(text)  # a JSON number: always a finite Decimal, cheap to build
    if exact.adjusted() < _INT_DIGITS and exact == exact.to_integral_value():
        whole = int(exact)
        try:
            str(whole)  # within the interpreter's int-string limit: json can write it back
        except ValueError:
            return value
        return whole
    return value


def _exact_int(text: str) -> Any:
    try:
        return int(text)
    except ValueError:  # past the int-string limit: a number past a float's range, as json's
        return -math.inf if text.startswith("-") else math.inf


# The most digits an exact integer read from a float's text may have (int's default text limit).
_INT_DIGITS: Final = 4300
_EXACT: Final = json.JSONDecoder(parse_float=_exact_float, parse_int=_exact_int)


def too_deep(text: str, start: int = 0) -> bool:
    """Whether the JSON value at ``start`` could nest deeper than ``MAX_DEPTH`` (cheap when not)."""
    if text.count("{", start) + text.count("[", start) <= MAX_DEPTH:
        return False
    return _nesting(text[start:].encode("utf-8", "surrogatepass")) > MAX_DEPTH


def _nesting(data: bytes) -> int:
    """How deep the first JSON value in ``data`` nests, as a JSON parser would count it.

    Escaped backslashes and quotes go first, so what is left of a string runs from one quote to
    the next. Past the first error a parser stops, so measuring what follows only overcounts.
    """
    plain = _JSON_STRING.sub(b"", data.replace(b"\\\\", b"").replace(b'\\"', b""))
    steps = memoryview(plain.translate(_BRACKET_STEPS, _NOT_BRACKETS)).cast("b")
    # Up to the value's last closing bracket, when the depth first comes back to zero.
    return max(takewhile(bool, accumulate(steps)), default=0)


def is_number(text: str) -> bool:
    """Whether ``text`` is a plain decimal number that ``int()`` reads (ASCII digits only)."""
    return 0 < len(text) <= _MAX_DIGITS and text.isascii() and text.isdigit()
