"""The manifest: what claims a submission id, and the names of the objects in its folder.

A manifest records who staged the id's rows (a plain submission, a resubmission, a run), the
rows' provider, model, count and size, and the MD5s of the input and the key map. Staging writes
it create-only after the rows; ``claims_same`` tells whether rows about to be staged are the rows
it claims. Pure, but for ``read_manifest``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from .._bigquery.dest import parse_dest
from .._errors import InvalidRequestError
from .._gcs.parts import parse_part_md5s, part_leaves
from .._gcs.staging import Folder, Staging
from .._requests.lines import StagedLine
from .._rules import Limits
from .._schemas.check import Schema, stored_schema
from .._values import PROVIDER_NAMES, Provider
from .._vertex.controls import NO_CONTROLS, Controls
from .._vertex.jobs import JobSpec
from .usage import TierUsage, parse_usage, usage_json

__all__ = [
    "INPUT_STEM",
    "KEYS_STEM",
    "MANIFEST",
    "PLAIN",
    "RECORD",
    "Manifest",
    "Tally",
    "check_limits",
    "claim_conflict",
    "measure",
    "no_rows",
    "read_manifest",
    "resubmit_origin",
    "run_origin",
]

INPUT_STEM = "input"  # parts: input.jsonl, input-00001-<md5>.jsonl, ... (``_gcs.parts``)
KEYS_STEM = "keys"
MANIFEST = "manifest.json"
RECORD = "job.json"
FORMAT = "vertexbatch/1"


# Who staged an id's rows. A run or a resubmission only ever adopts rows it staged itself, so
# an id it derives (``RUN.s0``, ``ID.r1``) that a plain submission already holds is refused,
# never taken over (and the other way round).
PLAIN = ""


def run_origin(run_id: str) -> str:
    return f"run:{run_id}"


def resubmit_origin(submission_id: str) -> str:
    return f"resubmit:{submission_id}"


def _describe_origin(origin: str) -> str:
    kind, _, of = origin.partition(":")
    if kind == "run":
        return f"run {of!r}"
    if kind == "resubmit":
        return f"a resubmission of {of!r}"
    return "a plain submission"


_MD5 = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True, slots=True)
class Manifest:
    """What claims an id: who staged it, the rows' provider, model, count, size, MD5s.

    ``md5`` is the MD5 of the input and ``keys_md5`` that of the key map (all their parts, in
    order): reading either back checks it, so a damaged object is an error, not a lost key.
    ``input_parts``, ``key_parts``: each part's MD5 when there are two or more (``_gcs.parts``).
    ``rejected`` is set when Vertex refused to create a job from it (see ``mark_rejected``).
    ``keys`` is the number of keys when it differs from ``rows`` (``dedupe=True`` staged some
    keys' requests once), else 0 and not written.
    ``cache`` marks a submission made with ``cache=True`` (its ok answers fill the answer
    cache); ``cached`` keys were answered from the cache, their answers staged in
    ``cached-<cached_md5>.jsonl`` (none of them has an input line, so ``rows`` may be 0).
    ``controls``: the job controls (labels, CMEK key, service account) the rows were submitted
    with, written only when set, so a manifest written before them reads the same.
    ``dest``: the BigQuery sink (``bq://P.D[.T]``), written only when set ("": the GCS prefix).
    ``source``: the BigQuery table the rows were read from (``bq://P.D.T``; "": given in
    Python), part of the claim; ``snapshot``: the read session's snapshot time when BigQuery
    reported it, not part of it. Both written only when set.
    ``canary``: the usage of the canary's answers per tier (``_staged.usage``; the requests sent
    online before the rows were staged, ``_submission.canary``), not part of the claim; written
    only when set.
    """

    provider: Provider
    model: str
    rows: int
    bytes: int
    md5: str
    keys_md5: str = ""  # "" in manifests written before key maps were verified
    origin: str = PLAIN
    rejected: str = ""
    keys: int = 0
    cache: bool = False
    cached: int = 0
    cached_md5: str = ""
    schema: Schema | None = None
    controls: Controls = NO_CONTROLS
    dest: str = ""
    source: str = ""
    snapshot: str = ""
    input_parts: tuple[str, ...] = ()  # each part's MD5, when the input is more than one
    key_parts: tuple[str, ...] = ()  # the same for the key map
    canary: TierUsage = field(default_factory=dict, hash=False)

    @property
    def key_count(self) -> int:
        """How many keys the rows answer (lines of the key map)."""
        return self.keys or self.rows

    def to_json(self) -> dict[str, Any]:
        data = {"format": FORMAT, **asdict(self)}
        if self.schema is not None:  # the class of a results pass's schema is never written
            del data["schema"]["model"]
        del data["controls"]
        if not self.controls.empty:
            data["controls"] = self.controls.to_json()
        if not self.rejected:
            del data["rejected"]
        data["canary"] = usage_json(self.canary)
        optional = ("keys", "cache", "cached", "cached_md5", "schema", "dest", "source", "snapshot")
        for name in (*optional, "input_parts", "key_parts", "canary"):
            if not data[name]:
                del data[name]
            elif isinstance(data[name], tuple):
                data[name] = list(data[name])
        return data

    @classmethod
    def from_json(cls, data: Any, where: str) -> Manifest:
        def bad(why: str) -> InvalidRequestError:
            return InvalidRequestError(
                f"{where} is not a vertexbatch manifest ({why}): it was not written by "
                "vertexbatch or was edited; submit under a new id",
                field="staging",
            )

        if not isinstance(data, dict):
            raise bad(f"a JSON {type(data).__name__}, not an object")
        for name, kind in (("provider", str), ("model", str), ("rows", int), ("bytes", int)):
            if not isinstance(data.get(name), kind) or isinstance(data.get(name), bool):
                raise bad(f"{name!r} is missing or not a {kind.__name__}")
        for name in ("md5", "keys_md5", "origin", "rejected", "cached_md5", "source", "snapshot"):
            if not isinstance(data.get(name, ""), str):
                raise bad(f"{name!r} is not a string")
        if data["provider"] not in PROVIDER_NAMES:
            raise bad("'provider' is neither 'anthropic' nor 'google'")
        cached = data.get("cached", 0)
        if type(cached) is not int or cached < 0 or type(data.get("cache", False)) is not bool:
            raise bad("'cached' is not a whole number or 'cache' not a boolean")
        if (data["rows"] < 1 or data["bytes"] < 1) and not (
            cached and data["rows"] == data["bytes"] == 0
        ):
            raise bad("'rows' and 'bytes' must be positive")
        keys = data.get("keys", 0)
        if type(keys) is not int or (keys and keys <= data["rows"]):
            raise bad("'keys' is not a whole number above 'rows'")
        for name in ("md5", "keys_md5", "cached_md5"):
            value = data.get(name, "")
            if (value or name == "md5") and not _MD5.fullmatch(value):
                raise bad(f"{name!r} is not a hex MD5")
        schema = None
        if data.get("schema") is not None:
            try:
                schema = stored_schema(data["schema"])
            except InvalidRequestError:
                raise bad("'schema' is not a schema vertexbatch wrote") from None
            if data["schema"].get("digest") != schema.digest:
                raise bad("'schema' does not match its digest")
        try:
            controls = Controls.from_json(data["controls"]) if "controls" in data else NO_CONTROLS
        except ValueError as exc:
            raise bad(str(exc)) from None
        if "controls" in data and controls.empty:
            raise bad("'controls' is written only when some are set")
        dest = data.get("dest", "")
        try:
            if "dest" in data and parse_dest(dest).uri != dest:
                raise InvalidRequestError("not as written")
        except InvalidRequestError:
            raise bad("'dest' is not a bq:// sink vertexbatch wrote") from None
        source = data.get("source", "")
        try:
            read = parse_dest(source, "source") if source else None
            if read is not None and (read.uri != source or not read.table):
                raise InvalidRequestError("not as written")
        except InvalidRequestError:
            raise bad("'source' is not a bq:// table vertexbatch wrote") from None
        parts = {name: parse_part_md5s(data.get(name)) for name in ("input_parts", "key_parts")}
        if any(v is None and name in data for name, v in parts.items()):
            raise bad("'input_parts' or 'key_parts' is not a list of two or more hex MD5s")
        canary = parse_usage(data.get("canary", {}), (keys or data["rows"]) + cached)
        if canary is None or ("canary" in data and not canary):
            raise bad("'canary' is not a canary's usage vertexbatch wrote")
        return cls(
            input_parts=parts["input_parts"] or (),
            key_parts=parts["key_parts"] or (),
            provider=data["provider"],
            model=data["model"],
            rows=data["rows"],
            bytes=data["bytes"],
            md5=data["md5"],
            keys_md5=data.get("keys_md5", ""),
            origin=data.get("origin", PLAIN),
            rejected=data.get("rejected", ""),
            keys=keys,
            cache=data.get("cache", False),
            cached=cached,
            cached_md5=data.get("cached_md5", ""),
            schema=schema,
            controls=controls,
            dest=dest,
            source=source,
            snapshot=data.get("snapshot", ""),
            canary=canary,
        )

    def claims_same(self, given: Manifest) -> bool:
        """Whether ``given`` (rows about to be staged) are the rows this manifest claims."""
        mine = (self.provider, self.model, self.rows, self.keys, self.bytes, self.md5, self.origin)
        cache = (self.cache, self.cached, self.cached_md5, _digest(self.schema))
        return (
            mine
            == (
                given.provider,
                given.model,
                given.rows,
                given.keys,
                given.bytes,
                given.md5,
                given.origin,
            )
            and cache == (given.cache, given.cached, given.cached_md5, _digest(given.schema))
            and self.controls == given.controls
            and self.dest == given.dest
            and self.source == given.source
            and (not self.keys_md5 or self.keys_md5 == given.keys_md5)
        )

    def spec(self, submission_id: str, folder: Folder) -> JobSpec:
        return JobSpec(
            id=submission_id,
            provider=self.provider,
            model=self.model,
            input_uri=folder.input_uri,
            input_uris=tuple(folder.uri(leaf) for leaf in part_leaves("input", self.input_parts)),
            output_prefix=folder.output_prefix,
            keys=self.key_count,
            controls=self.controls,
            dest=self.dest,
        )


def _sink(dest: str) -> str:
    return f"dest {dest!r}" if dest else "the GCS output prefix"


def _origin_of(source: str) -> str:
    return f"table {source}" if source else "requests given in Python"


def _digest(schema: Schema | None) -> str:
    return "" if schema is None else schema.digest


def claim_conflict(
    submission_id: str,
    staged: Manifest | None,
    given: Manifest,
    staged_md5: str = "",
    staged_keys_md5: str = "",
) -> InvalidRequestError:
    if staged is None and staged_keys_md5:
        # The same input with another key map: other keys for the same lines (dedupe's repeats,
        # cached keys), or the same keys in another order.
        what = f"other keys (its staged key map has MD5 {staged_keys_md5}; these rows' key map "
        what += f"has MD5 {given.keys_md5})"
    elif staged is None:
        # A submitter stopped after the input, before the manifest: only the input is known.
        what = f"other rows (its staged input has MD5 {staged_md5 or 'unknown'}; these rows "
        what += f"have MD5 {given.md5})"
    elif staged.origin != given.origin:
        what = (
            f"{_describe_origin(staged.origin)}, not {_describe_origin(given.origin)}: "
            "an id belongs to whoever staged it first"
        )
    elif (staged.provider, staged.model) != (given.provider, given.model):
        what = f"{staged.provider} model {staged.model!r}, not {given.model!r}"
    elif staged.cache != given.cache:
        what = f"rows submitted with cache={staged.cache}, not cache={given.cache}"
    elif staged.controls != given.controls and staged.md5 == given.md5:
        what = f"rows submitted with {staged.controls.difference(given.controls)}"
    elif staged.dest != given.dest and staged.md5 == given.md5:
        what = f"rows written to {_sink(staged.dest)}, not {_sink(given.dest)}"
    elif staged.source != given.source:
        what = f"rows from {_origin_of(staged.source)}, not from {_origin_of(given.source)}"
    else:
        what = (
            f"other rows ({staged.rows} rows, MD5 {staged.md5}; these are {given.rows} rows, "
            f"MD5 {given.md5})"
        )
    return InvalidRequestError(
        f"submission id {submission_id!r} is already claimed for {what}: submit these rows "
        "under a new id; nothing staged was changed",
        field="id",
    )


class Tally:
    """Counts, sizes and digests rows as they stream past, enforcing Vertex's limits."""

    def __init__(self, limits: Limits, *, hash_input: bool = True) -> None:
        self._limits = limits
        self.rows = 0
        self.keys = 0
        self.bytes = 0
        # Off when the input's upload takes the digest (in its sending thread).
        self._md5 = hashlib.md5(usedforsecurity=False) if hash_input else None
        self._keys_md5 = hashlib.md5(usedforsecurity=False)

    def add(self, line: StagedLine, key_record: bytes) -> None:
        self.keys += 1
        self._keys_md5.update(key_record)
        if not line.data:  # a deduplicated key: a key record, no input line
            return
        self.rows += 1
        self.bytes += len(line.data)
        limits = self._limits
        if self.rows > limits.rows or self.bytes > limits.input_bytes:  # no call per line else
            _check_limits(self.rows, self.bytes, line.key, limits)
        if self._md5 is not None:
            self._md5.update(line.data)

    def manifest(
        self, provider: Provider, model: str, origin: str, md5: str | None = None
    ) -> Manifest:
        """The manifest of the rows added; ``md5``: the input's, when this tally did not hash it."""
        if md5 is None:
            if self._md5 is None:
                raise ValueError("this tally did not hash the input: pass its md5")
            md5 = self._md5.hexdigest()
        return Manifest(
            provider=provider,
            model=model,
            rows=self.rows,
            bytes=self.bytes,
            md5=md5,
            keys_md5=self._keys_md5.hexdigest(),
            origin=origin,
            keys=self.keys if self.keys != self.rows else 0,
        )


def _check_limits(rows: int, size: int, key: str, limits: Limits) -> None:
    """Raise if ``rows`` rows of ``size`` bytes in all, the last keyed ``key``, pass one job's
    limits."""
    if rows > limits.rows:
        raise InvalidRequestError(
            f"more than {limits.rows:,} requests for one job, which is Vertex's limit: "
            "split them across ids (runs shard automatically)",
            field="requests",
        )
    if size > limits.input_bytes:
        raise InvalidRequestError(
            f"input passed {limits.input_bytes:,} bytes at request {key!r}, over "
            "Vertex's 1 GB limit for one job: split the requests across ids",
            field="requests",
        )


def check_limits(lines: Iterable[StagedLine], limits: Limits) -> None:
    """Raise as ``Tally.add`` would staging these lines as one job: over Vertex's row or byte
    limit. Lines with no data (a deduplicated or cached key) are no rows."""
    rows = size = 0
    for line in lines:
        if line.data:
            rows += 1
            size += len(line.data)
            _check_limits(rows, size, line.key, limits)


def no_rows(submission_id: str) -> InvalidRequestError:
    return InvalidRequestError(
        f"no requests to submit under id {submission_id!r}: a job needs at least one",
        field="requests",
    )


def measure(
    submission_id: str,
    provider: Provider,
    model: str,
    lines: Iterable[StagedLine],
    limits: Limits,
    origin: str = PLAIN,
) -> Manifest:
    """The manifest ``stage`` would write for these rows, with no I/O (the rows are consumed)."""
    tally = Tally(limits)
    for line in lines:
        tally.add(line, line.key_record())
    if not tally.keys:
        raise no_rows(submission_id)
    return tally.manifest(provider, model, origin)


def read_manifest(staging: Staging, submission_id: str) -> Manifest | None:
    """The id's manifest, ``None`` if nothing is staged under it."""
    folder = staging.folder(submission_id)
    raw = staging.read_json(folder.name(MANIFEST))
    return None if raw is None else Manifest.from_json(raw, folder.uri(MANIFEST))
