"""A run's ledger in GCS: what the run is (each finished shard's record: ``_runs.done``).

::

    PREFIX/RUN/run.json            the ledger: provider, model, max attempts, shard ids and sizes,
                                   the job controls, the BigQuery dataset and the online
                                   fallback's price tier (each written only when set)

It is written create-only and may have been edited by hand since: every field read back is
checked, and a ledger that does not hold is an ``InvalidRequestError`` naming it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

from .._bigquery.dest import parse_dest
from .._errors import InvalidRequestError, damaged_record
from .._gcs.staging import Staging
from .._providers import job_rows
from .._rules import RECORD_MAX, Limits, check_id
from .._staged.usage import TierUsage, parse_usage, usage_json
from .._values import PROVIDER_NAMES, Provider
from .._vertex.controls import NO_CONTROLS, Controls
from .._vertex.tiers import TIERS

__all__ = [
    "LEDGER_MAX",
    "MAX_ATTEMPTS",
    "Ledger",
    "Shard",
    "attempt_id",
    "check_ledger_size",
    "check_requests_fit",
    "check_run_id",
    "encoded_size",
    "ledger_size",
    "max_shards",
    "read_ledger",
    "write_ledger",
]

LEDGER = "run.json"
FORMAT = "vertexbatch-run/1"
# A run whose attempts' jobs carry its label (``_vertex.RUN_LABEL``): a step lists them once.
# A ledger of the first format is a run started before: its steps look up each attempt.
LABELLED_FORMAT = "vertexbatch-run/2"
MAX_ATTEMPTS = 99
# Room a run id must leave for shard and attempt suffixes (".s9999.r99") within 63 characters.
RUN_ID_MAX = 52
# The most a ledger may be: Staging reads a record back whole up to this, and refuses more.
LEDGER_MAX = RECORD_MAX  # read back whole: the default record limit (``Limits.record_bytes``)


@dataclass(frozen=True, slots=True)
class Shard:
    """One shard of a run: its id (``RUN.sN``, also its first attempt's id) and its key count."""

    id: str
    keys: int


def attempt_id(shard: Shard, attempt: int) -> str:
    """The submission id of a shard's attempt: ``RUN.sN``, then ``RUN.sN.r1``, ..."""
    return shard.id if attempt == 0 else f"{shard.id}.r{attempt}"


def check_run_id(run_id: str) -> str:
    """Return the run id if it is a valid id with room for the derived ids' suffixes."""
    check_id(run_id)
    if len(run_id) > RUN_ID_MAX:
        raise InvalidRequestError(
            f"run id {run_id!r} is over {RUN_ID_MAX} characters: a run needs room for shard "
            "and attempt suffixes such as '.s12.r2' within the 63 an id may have",
            field="id",
        )
    return run_id


@dataclass(frozen=True, slots=True)
class Ledger:
    """What a run is: written once when its shards are staged, never changed.

    ``labelled``: its attempts' jobs carry the run's label (every run started since the label
    came); ``False`` for a run started before, whose jobs are found one attempt at a time.
    ``controls``: the job controls every attempt's job is created with (and every object of the
    run written with, for a CMEK key). ``dest``: the BigQuery dataset every attempt's job
    writes a table in (``_runs.sink``; written only when set, "" for GCS).
    ``fallback_tier``: the price tier the online fallback asks for past a deadline
    (``_vertex.tiers``; written only when not ``"standard"``).
    ``canary``: the usage of the run's canary's answers per tier (``_staged.usage``; the
    requests sent online before the shards were staged, ``_submission.canary``), counted in
    the run's spend; written only when set, and no part of what the run is (``==``).
    """

    id: str
    provider: Provider
    model: str
    max_attempts: int
    shards: tuple[Shard, ...]
    labelled: bool = False
    controls: Controls = NO_CONTROLS
    dest: str = ""
    # Staged by this many tasks (``_runs.registry``), 0 by one process: its shard numbers are
    # interleaved by task (``RUN.s{n*tasks+task}``), increasing, with gaps where tasks differ.
    tasks: int = 0
    fallback_tier: str = "standard"
    canary: TierUsage = field(default_factory=dict, compare=False, hash=False)

    @property
    def span(self) -> int:
        """One past the highest shard number (the shard count, in a run of one process)."""
        return int(self.shards[-1].id.rpartition(".s")[2]) + 1 if self.shards else 0

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "format": LABELLED_FORMAT if self.labelled else FORMAT,
            "id": self.id,
            "provider": self.provider,
            "model": self.model,
            "max_attempts": self.max_attempts,
            "shards": [{"id": s.id, "keys": s.keys} for s in self.shards],
        }
        if not self.controls.empty:
            data["controls"] = self.controls.to_json()
        if self.dest:
            data["dest"] = self.dest
        if self.tasks:
            data["tasks"] = self.tasks
        if self.fallback_tier != "standard":
            data["fallback_tier"] = self.fallback_tier
        if self.canary:
            data["canary"] = usage_json(self.canary)
        return data

    @classmethod
    def from_json(cls, data: object, run_id: str, where: str) -> Ledger:
        """A ledger read from GCS, every field checked: it may have been edited."""

        def bad(why: str) -> InvalidRequestError:
            return damaged_record(where, "run ledger", why)

        if not isinstance(data, dict):
            raise bad(f"a JSON {type(data).__name__}, not an object")
        if data.get("id") != run_id:
            raise bad("its 'id' is not this run's id")
        provider = data.get("provider")
        if provider not in PROVIDER_NAMES:
            raise bad("'provider' is neither 'anthropic' nor 'google'")
        model = data.get("model")
        if not isinstance(model, str) or not model:
            raise bad("'model' is not a model id")
        attempts = data.get("max_attempts")
        if type(attempts) is not int or not 1 <= attempts <= MAX_ATTEMPTS:
            raise bad(f"'max_attempts' is not a whole number from 1 to {MAX_ATTEMPTS}")
        listed = data.get("shards")
        if not isinstance(listed, list) or not listed:
            raise bad("'shards' is not a list of shards")
        tasks = data.get("tasks", 0)
        if type(tasks) is not int or tasks < 0 or ("tasks" in data and not tasks):
            raise bad("'tasks' is not a count of tasks")
        shards: list[Shard] = []
        most = job_rows(model)  # one job's rows: the model's (``_providers.job_limits``)
        for index, entry in enumerate(listed):
            number = index
            if tasks:  # a tasked run's numbers increase, with gaps (``_runs.registry``)
                number = -1  # no shard's: refused below unless its number is above the last's
                named = entry.get("id") if isinstance(entry, dict) else None
                head, _, digits = named.rpartition(".s") if isinstance(named, str) else ("", "", "")
                above = int(shards[-1].id.rpartition(".s")[2]) if shards else -1
                if head == run_id and digits.isdigit() and int(digits) > above:
                    number = int(digits)
            if (
                not isinstance(entry, dict)
                or entry.get("id") != f"{run_id}.s{number}"
                or type(entry.get("keys")) is not int
                or not 1 <= entry["keys"] <= most
            ):
                shown = "N" if tasks else str(index)
                rule = ", N above the previous shard's" if tasks else ""
                raise bad(
                    f"shard {index} is not {{'id': '{run_id}.s{shown}', 'keys': 1-{most}}}" + rule
                )
            shards.append(Shard(entry["id"], entry["keys"]))
        labelled = data.get("format") == LABELLED_FORMAT
        try:
            controls = Controls.from_json(data["controls"]) if "controls" in data else NO_CONTROLS
        except ValueError as exc:
            raise bad(str(exc)) from None
        if "controls" in data and controls.empty:
            raise bad("'controls' is written only when some are set")
        dest = data.get("dest", "")
        if "dest" in data and not is_dataset(dest):
            raise bad("'dest' is not a bq://PROJECT.DATASET vertexbatch wrote")
        tier = data.get("fallback_tier", "standard")
        if tier not in TIERS or ("fallback_tier" in data and tier == "standard"):
            raise bad(f"'fallback_tier' is not one of {', '.join(TIERS[1:])}")
        canary = parse_usage(data.get("canary", {}), sum(s.keys for s in shards))
        if canary is None or ("canary" in data and not canary):
            raise bad("'canary' is not a canary's usage vertexbatch wrote")
        return cls(
            run_id, provider, model, attempts, tuple(shards), labelled, controls, dest, tasks, tier,
            canary,
        )  # fmt: skip


def is_dataset(dest: object) -> bool:
    """Whether ``dest`` is a ``bq://PROJECT.DATASET`` as ``check_run_dest`` gives one."""
    try:
        sink = parse_dest(dest)
    except InvalidRequestError:
        return False
    return not sink.table and sink.uri == dest


def _encoded(ledger: Ledger) -> bytes:
    # As ``Staging.create_json`` writes it (a test checks the two agree).
    return json.dumps(ledger.to_json(), sort_keys=True, indent=1).encode("utf-8")


def encoded_size(ledger: Ledger) -> int:
    """The bytes of ``ledger`` as ``write_ledger`` writes it."""
    return len(_encoded(ledger))


def ledger_size(
    run_id: str,
    provider: Provider,
    model: str,
    max_attempts: int,
    shards: int,
    max_keys: int,
    controls: Controls = NO_CONTROLS,
    dest: str = "",
    tier: str = "standard",
) -> int:
    """The bytes of the ledger of ``shards`` shards of at most ``max_keys`` keys each (and
    ``controls``, ``dest``, fallback ``tier``), as ``write_ledger`` writes it (a canary aside:
    it is left out of a ledger it would not fit): exact when every shard holds ``max_keys``,
    else an upper bound."""
    if shards < 1 or max_keys < 1:
        raise ValueError(f"a ledger has shards of keys, not {shards} shards of {max_keys}")

    def of(n: int) -> int:
        listed = tuple(Shard(f"{run_id}.s{i}", max_keys) for i in range(n))
        ledger = Ledger(
            run_id, provider, model, max_attempts, listed, True, controls, dest, 0, tier
        )
        return len(_encoded(ledger))

    one = of(1)
    # Each further shard adds the same entry, but for the digits of its index (1 in shard 1's).
    entry = of(2) - one - 1
    digits, low = 0, 1  # the digits of the indexes 1 to shards - 1
    while low < shards:
        digits += (min(shards, low * 10) - low) * len(str(low))
        low *= 10
    return one + (shards - 1) * entry + digits


def max_shards(
    run_id: str,
    provider: Provider,
    model: str,
    max_attempts: int,
    max_keys: int,
    limits: Limits,
    controls: Controls = NO_CONTROLS,
    dest: str = "",
    tier: str = "standard",
) -> int:
    """The most shards of at most ``max_keys`` keys a run's ledger can hold
    (``limits.record_bytes``)."""
    most = limits.record_bytes
    low, high = 0, most  # every shard's entry takes more than a byte
    while low < high:
        mid = (low + high + 1) // 2
        size = ledger_size(
            run_id, provider, model, max_attempts, mid, max_keys, controls, dest, tier
        )
        if size <= most:
            low = mid
        else:
            high = mid - 1
    return low


def check_ledger_size(
    run_id: str,
    provider: Provider,
    model: str,
    max_attempts: int,
    shards: int,
    shard_size: int,
    limits: Limits,
    *,
    why: str = "",
    then: str = "",
    controls: Controls = NO_CONTROLS,
    dest: str = "",
    tier: str = "standard",
) -> None:
    """Raise unless the ledger of ``shards`` shards of ``shard_size`` keys (and ``controls``,
    ``dest``, fallback ``tier``) can be read back.

    ``why`` says how the number of shards is known, at the start of the message; ``then``
    ends it.
    """
    size = ledger_size(
        run_id, provider, model, max_attempts, shards, shard_size, controls, dest, tier
    )
    if size <= limits.record_bytes:
        return
    most = max_shards(
        run_id, provider, model, max_attempts, shard_size, limits, controls, dest, tier
    )
    raise InvalidRequestError(
        f"{why or f'{shards:,} shards'}: the ledger of run {run_id!r} would be {size:,} bytes, "
        f"over the {limits.record_bytes:,} a ledger may be, as it is read back whole (it holds at "
        f"most {most:,} shards under this run id with shard_size={shard_size}); use a larger "
        f"shard_size{then}",
        field="shard_size",
    )


def check_requests_fit(
    run_id: str,
    provider: Provider,
    model: str,
    max_attempts: int,
    count: int,
    shard_size: int,
    limits: Limits,
    controls: Controls = NO_CONTROLS,
    dest: str = "",
    tier: str = "standard",
) -> None:
    """Raise unless ``count`` requests, cut in shards of ``shard_size``, fit a ledger that can be
    read back (known before they are read when they are a list: checked before any call)."""
    if count <= shard_size:
        return
    at_least = -(-count // shard_size)  # more when 1 GB cuts a shard short
    check_ledger_size(
        run_id,
        provider,
        model,
        max_attempts,
        at_least,
        shard_size,
        limits,
        why=f"{count:,} requests in shards of {shard_size:,} make at least {at_least:,} shards",
        controls=controls,
        dest=dest,
        tier=tier,
    )


def read_ledger(staging: Staging, run_id: str) -> Ledger | None:
    """The run's ledger, ``None`` if there is no run under the id."""
    folder = staging.folder(run_id)
    data = staging.read_json(folder.name(LEDGER))
    return None if data is None else Ledger.from_json(data, run_id, folder.uri(LEDGER))


def write_ledger(staging: Staging, ledger: Ledger) -> bool:
    """Write the ledger create-only; ``False`` if the id already holds another run. A canary's
    record that alone would take it past ``staging.limits.record_bytes`` is left out.

    Raises:
        InvalidRequestError: the ledger is over ``staging.limits.record_bytes``: it could never
            be read back.
    """
    size = len(_encoded(ledger))
    most = staging.limits.record_bytes
    if size > most and ledger.canary:  # the canary's record never costs a run its ledger
        ledger = replace(ledger, canary={})
        size = len(_encoded(ledger))
    if size > most:
        raise InvalidRequestError(
            f"{len(ledger.shards):,} shards: the ledger of run {ledger.id!r} would be {size:,} "
            f"bytes, over the {most:,} a ledger may be, as it is read back whole; use a "
            "larger shard_size",
            field="shard_size",
        )
    name = staging.folder(ledger.id).name(LEDGER)
    return staging.create_json(name, ledger.to_json()) or read_ledger(staging, ledger.id) == ledger
