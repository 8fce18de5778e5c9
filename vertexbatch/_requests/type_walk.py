"""Walking a request against the SDK types it follows: the first field they do not name (pure).

``Compiler`` turns type annotations (``TypedDict``s, pydantic models, their unions, lists and
maps) into schema nodes, one per type and resolved on first use, as the types recurse;
``Walk.find`` answers the first field of a value its node does not name, as an ``Unknown``. What
the types are, and which provider they are for, is ``_requests.sdk_fields``'s.
"""

from __future__ import annotations

import difflib
import threading
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["FREE", "LEAF", "Compiler", "ListOf", "Record", "Segment", "Unknown", "Walk"]

Segment = tuple[Literal["field", "index", "tag", "entry"], str | int, str, int]
"""One step of a place: a field (as written, its proto name, its position among its object's
keys from 1), an index, a union's tag (Anthropic's paths name the member: ``content.0.text``),
a map entry (its position from 0, as Google counts entries)."""


@dataclass(frozen=True, slots=True)
class Unknown:
    """The first unknown field of a request: where it is and its name, never a value."""

    name: str  # the unknown field, as written
    parent: tuple[Segment, ...] = ()  # the object that holds it
    position: int = 1  # the unknown field's position among that object's keys, from 1
    near: str | None = None  # the closest field the type does name (a misspelling's fix)

    @property
    def path(self) -> str:
        """The place as a reader writes it: ``messages[0].contnet``, ``temprature``."""
        return _dotted(self.parent, self.name)

    def safe_path(self, shown: Callable[[str], bool]) -> str:
        """``path`` with each name ``shown`` rejects written by its position (``<field 2>``):
        a mapping's keys may be content."""
        name = self.name if shown(self.name) else f"<field {self.position}>"
        return _dotted(self.parent, name, shown)

    @property
    def anthropic_message(self) -> str:
        """Anthropic's message: ``messages.0.contnet: Extra inputs are not permitted``."""
        parts = [str(step[1]) for step in self.parent]
        return ".".join([*parts, self.name]) + ": Extra inputs are not permitted"

    @property
    def google_message(self) -> str:
        """Google's message: ``Invalid JSON payload received. Unknown name "x" at 'a.b[0]':
        Cannot find field.`` (the place in proto names; a map entry as ``[i].value``)."""
        place = ""
        for kind, value, proto, _ in self.parent:
            if kind == "field":
                place += f".{proto}" if place else proto
            elif kind == "index":
                place += f"[{value}]"
            elif kind == "entry":
                place += f"[{value}].value"
        at = f" at '{place}'" if place else ""
        return f'Invalid JSON payload received. Unknown name "{self.name}"{at}: Cannot find field.'


def _dotted(
    parent: Iterable[Segment], name: str | None, shown: Callable[[str], bool] | None = None
) -> str:
    path = ""
    for kind, value, _, position in parent:
        if kind == "field":
            text = str(value)
            if shown is not None and not shown(text):
                text = f"<field {position}>"
            path += f".{text}" if path else text
        elif kind in ("index", "entry"):
            path += f"[{value}]"
    if name is None:
        return path
    return f"{path}.{name}" if path else name


# The schema: what each node of a request may be.


class _Free:
    """Any JSON (``Any``, ``object``): not looked into."""


class _Leaf:
    """A scalar type (``str``, an enum, ``Literal``, bytes): holds no fields."""


FREE = _Free()
LEAF = _Leaf()


@dataclass(eq=False)
class Record:
    """An object with a closed set of fields (a TypedDict, a pydantic model)."""

    source: Any  # the type the fields come from, resolved on first use
    fields: dict[str, tuple[Any, str]] = field(default_factory=dict)  # name -> (node, proto)
    literals: dict[str, frozenset[Any]] = field(default_factory=dict)  # Literal fields' values
    tag: str | None = None  # its ``type`` literal, when it has exactly one
    required: frozenset[str] = frozenset()  # the fields it must have
    resolved: bool = False
    deep: dict[str, tuple[Any, str]] | None = None  # the fields worth walking into, once known


@dataclass(frozen=True, eq=False)
class ListOf:
    """A list (``Iterable``, ``Sequence``, ``List``) of one node."""

    item: Any


@dataclass(frozen=True, eq=False)
class MapOf:
    """A map with free keys (``Dict[str, X]``): its values are walked, never its keys."""

    value: Any


@dataclass(frozen=True, eq=False)
class UnionOf:
    """A union: a value is one of these members (``Compiler.candidates`` says which may be)."""

    members: tuple[Any, ...]


_LISTS = (list, tuple, set, frozenset, Iterable, Sequence)
_MAPS = (dict, Mapping)


class Compiler:
    """Turns SDK type annotations into schema nodes, one node per type (types recurse)."""

    def __init__(self) -> None:
        self._records: dict[Any, Record] = {}
        self._unions: dict[int, tuple[str | None, dict[Any, list[Any]], list[Any]]] = {}
        self._tagged: dict[tuple[int, Any], list[Any]] = {}  # members by a union's literal
        # One compiler serves every thread (the emulator's request threads, client.aio's
        # workers): a record is resolved by one thread while the others wait for it.
        self._resolving = threading.RLock()

    def node(self, annotation: Any) -> Any:
        origin = typing.get_origin(annotation)
        args = typing.get_args(annotation)
        if annotation is Any or annotation is object:
            return FREE
        if origin is typing.Annotated:
            return self.node(args[0])
        if origin in (typing.Required, typing.NotRequired) or _named(origin, "Required"):
            return self.node(args[0])
        if origin is Literal:
            return LEAF
        if origin is typing.Union or _is_union_type(annotation):
            members = tuple(self.node(a) for a in args if a is not type(None))
            members = tuple(m for m in members if m is not LEAF) or (LEAF,)
            return members[0] if len(members) == 1 else UnionOf(members)
        if origin is not None:
            if isinstance(origin, type) and issubclass(origin, _MAPS):
                return MapOf(self.node(args[1])) if len(args) == 2 else MapOf(FREE)
            if isinstance(origin, type) and (
                issubclass(origin, _LISTS) or _named(origin, "SequenceNotStr")
            ):
                return ListOf(self.node(args[0])) if args else ListOf(FREE)
            return LEAF
        if isinstance(annotation, type):
            if _is_typeddict(annotation) or _is_model(annotation):
                return self.record(annotation)
            if annotation in (dict,):
                return MapOf(FREE)
            if annotation in (list, tuple):
                return ListOf(FREE)
        return LEAF

    def candidates(self, union: UnionOf, value: Mapping[Any, Any]) -> list[Any]:
        """The members of ``union`` a mapping may be: those whose ``Literal`` fields it
        matches (the ones a literal names first), then maps and free JSON."""
        index = self._unions.get(id(union))
        if index is None:
            index = self._unions[id(union)] = self._index(union)
        key, by_value, rest = index
        chosen: list[Any] = rest
        if key is not None and key in value:
            tagged = (id(union), value[key])
            try:
                found = self._tagged.get(tagged)
                if found is not None:
                    return found
                chosen = by_value.get(value[key], []) + rest
            except TypeError:  # an unhashable value names no member
                pass
            else:
                if not rest and all(len(m.literals) == 1 for m in chosen):
                    # The literal alone decides: the same members for every such value.
                    self._tagged[tagged] = chosen
                    return chosen
        elif key is not None:  # members that may leave their literal out (a custom tool)
            chosen = [
                m for members in by_value.values() for m in members if key not in m.required
            ] + rest
        said: list[Any] = []
        unsaid: list[Any] = []
        other: list[Any] = []
        for member in chosen:
            if type(member) is Record:
                fit = _fit(member, value)
                if fit is not None:
                    (said if fit else unsaid).append(member)
            else:
                other.append(member)
        return said + unsaid + other

    def _index(self, union: UnionOf) -> tuple[str | None, dict[Any, list[Any]], list[Any]]:
        """A union's members by the value of the ``Literal`` field most of them have."""
        records = [self.resolve(m) for m in union.members if type(m) is Record]
        counts: dict[str, int] = {}
        for record in records:
            for name in record.literals:
                counts[name] = counts.get(name, 0) + 1
        key = max(counts, key=lambda name: counts[name]) if counts else None
        by_value: dict[Any, list[Any]] = {}
        rest: list[Any] = []
        for member in union.members:
            if type(member) is Record and key is not None and key in member.literals:
                for allowed in member.literals[key]:
                    by_value.setdefault(allowed, []).append(member)
            elif type(member) is Record or type(member) is MapOf or member is FREE:
                rest.append(member)
        return key, by_value, rest

    def record(self, source: Any) -> Record:
        found = self._records.get(source)
        if found is None:
            found = self._records[source] = Record(source)
        return found

    def resolve(self, record: Record) -> Record:
        """Fill a record's fields from its type, once.

        ``resolved`` is set only once every field is in: a thread that saw it set before the
        fields were filled would take a known field for an unknown one (a 400 for a valid
        request), and cache the partial fields for good."""
        if record.resolved:
            return record
        with self._resolving:
            if not record.resolved:
                self._fill(record)
                record.resolved = True
        return record

    def _fill(self, record: Record) -> None:
        source = record.source
        if _is_typeddict(source):
            hints = typing.get_type_hints(source, include_extras=True)
            items = [(name, name, hint) for name, hint in hints.items()]
            record.required = frozenset(source.__required_keys__)
        else:
            items = []
            required = set()
            for name, info in source.model_fields.items():
                items.append((name, name, info.annotation))
                if info.alias and info.alias != name:
                    items.append((info.alias, name, info.annotation))
                if info.is_required():
                    required.add(info.alias or name)
            record.required = frozenset(required)
        for wire, proto, hint in items:
            record.fields[wire] = (self.node(hint), proto)
            values = _literal_values(hint)
            if values is not None:
                record.literals[wire] = values
        tag = record.literals.get("type")
        if tag is not None and len(tag) == 1:
            (only,) = tag
            record.tag = str(only)


def _named(origin: Any, name: str) -> bool:
    return getattr(origin, "__name__", None) == name or getattr(origin, "_name", None) == name


def _is_union_type(annotation: Any) -> bool:
    import types

    return isinstance(annotation, types.UnionType)


def _is_typeddict(value: Any) -> bool:
    import typing_extensions

    return isinstance(value, type) and typing_extensions.is_typeddict(value)


def _is_model(value: Any) -> bool:
    import pydantic

    return isinstance(value, type) and issubclass(value, pydantic.BaseModel)


def _literal_values(hint: Any) -> frozenset[Any] | None:
    """The values of a ``Literal`` field (through Required, Optional, Annotated), else None."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Literal:
        return frozenset(args)
    if origin in (typing.Annotated, typing.Required, typing.NotRequired):
        return _literal_values(args[0])
    if origin is typing.Union or _is_union_type(hint):
        found: set[Any] = set()
        for arg in args:
            if arg is type(None):
                continue
            values = _literal_values(arg)
            if values is None:
                return None
            found |= values
        return frozenset(found)
    return None


# The walk.


class _Found(Exception):
    """Raised from deep in a walk with the unknown field; the place is built on the way out."""

    def __init__(self, name: str, position: int, known: Iterable[str] = ()) -> None:
        super().__init__(name)
        self.name = name
        self.position = position
        near = difflib.get_close_matches(name, list(known), n=1, cutoff=0.75)
        self.near = near[0] if near else None
        self.steps: list[Segment] = []  # innermost first


class Walk:
    """The first unknown field of a value, by its schema node. Nothing is allocated for the
    place until one is found (most lines have none): the steps are added as ``_Found``
    leaves each level."""

    def __init__(self, compiler: Compiler, tags: bool) -> None:
        self.compiler = compiler
        self.tags = tags  # whether a union member's tag is a step of the place (Anthropic)

    def find(self, value: Any, node: Any) -> Unknown | None:
        try:
            self.walk(value, node)
        except _Found as found:
            steps = tuple(reversed(found.steps))
            return Unknown(found.name, steps, found.position, found.near)
        return None

    def walk(self, value: Any, node: Any) -> None:
        kind = type(node)
        if kind is Record:
            if type(value) is dict or isinstance(value, Mapping):
                self.record(value, node)
        elif kind is ListOf:
            if type(value) is list or isinstance(value, list | tuple):
                item_node = node.item
                if item_node is LEAF or item_node is FREE:
                    return
                for index, item in enumerate(value):
                    try:
                        self.walk(item, item_node)
                    except _Found as found:
                        found.steps.append(("index", index, "", 0))
                        raise
        elif kind is MapOf:
            item_node = node.value
            if item_node is LEAF or item_node is FREE:
                return
            if type(value) is dict or isinstance(value, Mapping):
                for position, item in enumerate(value.values()):
                    try:
                        self.walk(item, item_node)
                    except _Found as found:
                        found.steps.append(("entry", position, "", 0))
                        raise
        elif kind is UnionOf:
            self.union(value, node)

    def record(self, value: Mapping[Any, Any], node: Record) -> None:
        deep = node.deep
        if deep is None:
            fields = self.compiler.resolve(node).fields
            deep = node.deep = {
                name: known for name, known in fields.items() if known[0] not in (LEAF, FREE)
            }
        fields = node.fields
        if not fields.keys() >= value.keys():  # one set operation, in C, for the usual case
            for position, name in enumerate(value, 1):
                if type(name) is not str or name not in fields:
                    raise _Found(str(name), position, fields)
        if not deep:
            return
        for name, item in value.items():
            known = deep.get(name)
            if known is None or item is None:
                continue
            try:
                self.walk(item, known[0])
            except _Found as found:
                found.steps.append(("field", name, known[1], list(value).index(name) + 1))
                raise

    def union(self, value: Any, node: UnionOf) -> None:
        if type(value) is dict or isinstance(value, Mapping):
            members = self.compiler.candidates(node, value)
        elif isinstance(value, list | tuple):
            members = [m for m in node.members if type(m) is ListOf]
        else:
            return
        if not members or FREE in members:
            return
        first: _Found | None = None
        for member in members:
            try:
                self.walk(value, member)
            except _Found as found:
                if self.tags and type(member) is Record and member.tag is not None:
                    found.steps.append(("tag", member.tag, "", 0))
                first = first or found
            else:
                return
        if first is not None:
            raise first


def _fit(record: Record, value: Mapping[Any, Any]) -> bool | None:
    """Whether ``value`` is this member of a union: None when one of its ``Literal`` fields
    says it is not, True when one says it is, False when none says either."""
    said = False
    for name, allowed in record.literals.items():
        if name in value:
            try:
                if value[name] not in allowed:
                    return None
            except TypeError:  # an unhashable value: not this member's literal
                return None
            said = True
    return said
