"""The list `filter` subset of AIP-160 that Vertex's batchPredictionJobs.list accepts (pure).

Grammar (AIP-160 precedence: OR binds tighter than AND; juxtaposition means AND):

    expression := sequence {"AND" sequence}
    sequence   := factor {factor}
    factor     := term {"OR" term}
    term       := ["NOT" | "-"] (comparison | "(" expression ")")
    comparison := FIELD OP VALUE        OP: = != : < <= > >=

Fields, as the Vertex reference documents them for batchPredictionJobs.list (snake_case or
camelCase): `display_name` (= != :), `model_display_name` (= !=), `state` (= !=), `create_time`
(= != < <= > >= with an RFC3339 value), `labels.KEY=VALUE` and `labels.KEY:*` ("has the key";
`labels.KEY!=VALUE` too, AIP-160's map comparison). Any other field or operator is refused.
Values are bare words or double-quoted strings. `:` on a string is "contains"; `*` in its value
is a wildcard. A publisher-model job's model display name is its model id (`gemini-2.5-flash`;
UNCONFIRMED: Vertex shows no display name for publisher models).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

__all__ = ["STATES", "FilterError", "JobView", "compile_filter"]

STATES = frozenset(
    {
        "JOB_STATE_UNSPECIFIED",
        "JOB_STATE_QUEUED",
        "JOB_STATE_PENDING",
        "JOB_STATE_RUNNING",
        "JOB_STATE_SUCCEEDED",
        "JOB_STATE_FAILED",
        "JOB_STATE_CANCELLING",
        "JOB_STATE_CANCELLED",
        "JOB_STATE_PAUSED",
        "JOB_STATE_EXPIRED",
        "JOB_STATE_UPDATING",
        "JOB_STATE_PARTIALLY_SUCCEEDED",
    }
)


class FilterError(ValueError):
    """The filter is not in the supported subset (the service answers 400 INVALID_ARGUMENT)."""


@dataclass(frozen=True, slots=True)
class JobView:
    """The fields of a job a filter can read."""

    display_name: str
    state: str
    labels: Mapping[str, str]
    create_time: datetime
    update_time: datetime
    model_display_name: str = ""


Predicate = Callable[[JobView], bool]

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<string>"(?:[^"\\]|\\.)*")
      | (?P<op><=|>=|!=|=|<|>|:)
      | (?P<paren>[()])
      | (?P<word>[^\s()"=!<>:]+)
    )""",
    re.VERBOSE,
)

_OPS = ("=", "!=", ":", "<", "<=", ">", ">=")


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "string", "op", "paren", "word"
    text: str


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise FilterError(f"Unexpected character at position {pos} of the filter.")
        kind = match.lastgroup or ""
        value = match.group(kind)
        if kind == "string":
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        tokens.append(_Token(kind, value))
        pos = match.end()
    return tokens


def _parse_time(value: str) -> datetime:
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise FilterError("create_time needs an RFC3339 timestamp.") from None
    if moment.tzinfo is None or "T" not in text.upper():
        raise FilterError("create_time needs an RFC3339 timestamp with a time zone.")
    return moment.astimezone(UTC)


def _wildcard(value: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in value.split("*")), re.DOTALL)


def _string_predicate(op: str, value: str, get: Callable[[JobView], str | None]) -> Predicate:
    if op == "=":
        return lambda job: get(job) == value
    if op == "!=":
        return lambda job: get(job) != value
    if op == ":":
        if value == "*":
            return lambda job: get(job) is not None
        pattern = _wildcard(value)
        return lambda job: (found := get(job)) is not None and pattern.search(found) is not None
    raise FilterError(f"Operator {op} is not supported for this field.")


# The fields the Vertex reference documents for batchPredictionJobs.list, by every name it
# uses (snake_case in the v1 proto docstring, camelCase on the REST pages), and their operators.
_FIELDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "display_name": ("display_name", ("=", "!=", ":")),
    "displayName": ("display_name", ("=", "!=", ":")),
    "model_display_name": ("model_display_name", ("=", "!=")),
    "modelDisplayName": ("model_display_name", ("=", "!=")),
    "state": ("state", ("=", "!=")),
    "create_time": ("create_time", ("=", "!=", "<", "<=", ">", ">=")),
    "createTime": ("create_time", ("=", "!=", "<", "<=", ">", ">=")),
}
_SUPPORTED = (
    "display_name (= != :), model_display_name (= !=), state (= !=), create_time (= != < <= > "
    ">=), labels.KEY=VALUE and labels.KEY:*"
)


def _unsupported(what: str) -> FilterError:
    return FilterError(f"Unsupported {what} in the filter; supported: {_SUPPORTED}.")


def _comparison(field: str, op: str, value: str) -> Predicate:
    if field.startswith("labels.") and len(field) > len("labels."):
        key = field[len("labels.") :]
        if op == ":" and value != "*":
            raise _unsupported(f"operator ':' with a value other than * on {field}")
        if op not in ("=", "!=", ":"):
            raise _unsupported(f"operator {op} on {field}")
        return _string_predicate(op, value, lambda job: job.labels.get(key))
    known = _FIELDS.get(field)
    if known is None:
        raise _unsupported(f"field {field[:100]!r}")
    name, ops = known
    if op not in ops:
        raise _unsupported(f"operator {op} on {field}")
    if name == "display_name":
        return _string_predicate(op, value, lambda job: job.display_name)
    if name == "model_display_name":
        return _string_predicate(op, value, lambda job: job.model_display_name)
    if name == "state":
        if value not in STATES:
            raise FilterError(f"Unknown job state {value[:100]!r} in the filter.")
        return _string_predicate(op, value, lambda job: job.state)
    moment = _parse_time(value)

    def compare(job: JobView) -> bool:
        mine = job.create_time
        return {
            "=": mine == moment,
            "!=": mine != moment,
            "<": mine < moment,
            "<=": mine <= moment,
            ">": mine > moment,
            ">=": mine >= moment,
        }[op]

    return compare


class _Parser:
    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens
        self.pos = 0

    def peek(self) -> _Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> _Token:
        token = self.peek()
        if token is None:
            raise FilterError("The filter ends unexpectedly.")
        self.pos += 1
        return token

    def is_word(self, word: str) -> bool:
        token = self.peek()
        return token is not None and token.kind == "word" and token.text == word

    def expression(self) -> Predicate:
        parts = [self.sequence()]
        while self.is_word("AND"):
            self.take()
            parts.append(self.sequence())
        return _all(parts)

    def sequence(self) -> Predicate:
        parts = [self.factor()]
        while True:
            token = self.peek()
            if token is None or (token.kind == "paren" and token.text == ")"):
                break
            if self.is_word("AND"):
                break
            parts.append(self.factor())
        return _all(parts)

    def factor(self) -> Predicate:
        parts = [self.term()]
        while self.is_word("OR"):
            self.take()
            parts.append(self.term())
        if len(parts) == 1:
            return parts[0]
        return lambda job: any(p(job) for p in parts)

    def term(self) -> Predicate:
        token = self.take()
        if token.kind == "word" and token.text in ("NOT", "-"):
            inner = self.term()
            return lambda job: not inner(job)
        if token.kind == "word" and token.text.startswith("-") and len(token.text) > 1:
            self.tokens[self.pos - 1] = _Token("word", token.text[1:])
            self.pos -= 1
            inner = self.term()
            return lambda job: not inner(job)
        if token.kind == "paren" and token.text == "(":
            inner = self.expression()
            closing = self.take()
            if closing.kind != "paren" or closing.text != ")":
                raise FilterError("Missing ')' in the filter.")
            return inner
        if token.kind != "word" or token.text in ("AND", "OR"):
            raise FilterError("Expected a field name in the filter.")
        op = self.take()
        if op.kind != "op" or op.text not in _OPS:
            raise FilterError("Expected an operator after the field name.")
        value = self.take()
        if value.kind not in ("word", "string"):
            raise FilterError("Expected a value after the operator.")
        return _comparison(token.text, op.text, value.text)


def _all(parts: list[Predicate]) -> Predicate:
    if len(parts) == 1:
        return parts[0]
    return lambda job: all(p(job) for p in parts)


def compile_filter(text: str) -> Predicate:
    """Compile a list filter into a predicate over JobView; an empty filter matches everything.

    Raises:
        FilterError: the filter is malformed or outside the supported subset.
    """
    tokens = _tokenize(text)
    if not tokens:
        return lambda job: True
    parser = _Parser(tokens)
    predicate = parser.expression()
    if parser.peek() is not None:
        raise FilterError("Unexpected text at the end of the filter.")
    return predicate
