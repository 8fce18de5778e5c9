"""A plan before paying: what a submission would stage, send and cost, with nothing staged.

``Plan`` is the value; ``build_plan`` computes it from the staged lines a submit would write
(so a plan refuses what submit refuses), a cache lookup and an optional exact token count, all
handed in as functions: the arithmetic here is pure. Token estimates are deliberately simple and
stated in ``Plan.assumptions``: about 4 characters of request text per input token, the
request's ``max_tokens`` (Gemini ``maxOutputTokens``) as the output ceiling.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from .._providers import PROVIDERS, job_limits
from .._requests.dedupe import exact_digest
from .._requests.lines import StagedLine, staged_body
from .._rules import DEFAULT_LIMITS, Limits
from .._staged.manifest import Tally
from .._values import Provider
from .bands import band_cost, band_said
from .canary import canary_cost, canary_said, too_few_requests
from .prices import BATCH_DISCOUNT, PRICES, Price, lapsed, price_of

__all__ = ["Plan", "build_plan", "cache_said", "estimate_tokens", "output_ceiling"]

# Characters of request text per input token in the estimate: English text runs at about 4.
CHARS_PER_TOKEN = 4
# Fields whose string values are structure, not text the model reads as prompt.
_STRUCTURE = frozenset({"type", "role", "anthropic_version", "mimeType", "media_type"})


@dataclass(frozen=True, slots=True)
class Plan:
    """What a submission would do and cost; nothing was staged and no job was created.

    Attributes:
        provider / model: as given.
        requests: the keys given.
        distinct: distinct requests among them (by exact digest, as dedupe counts them).
        cached: keys the answer cache holds (0 without ``cache=True``).
        to_send: lines that would be staged and paid (with ``dedupe``, once per distinct
            request; never for a cached key).
        bytes: bytes of those lines.
        jobs: Vertex jobs it would create (0 when every key is cached; shards for a run).
        input_tokens: input tokens of the lines to send, estimated or, with
            ``tokens_exact``, counted by the provider's count-tokens API.
        max_output_tokens: the sum of the lines' output ceilings (``max_tokens``).
        cost_low / cost_high: US dollars at batch prices: input only, and input plus every
            line writing its whole output ceiling. ``None`` when no price is known.
        price: the online list price used (``None``: unknown model, pass ``prices=``; or its
            price no longer holds, ``price_until``).
        price_until: the last day the price found for the model holds (ISO), when the plan is
            made after it (UTC): ``price`` is then ``None`` and the costs unknown; ``""`` else.
        assumptions: what the figures rest on, in words.
        submitted: the job the id already holds for these requests (``cached:ID`` for one
            answered from the cache; ``run:ID`` for a run plan of a run the id already holds):
            submitting them again returns it (rejoins the run), so nothing more is sent or
            paid. ``""`` when submitting would stage or create.
        dest: the BigQuery sink the job would write (``dest=``); ``""`` for the id's GCS folder.
        canary: requests sent online before anything is staged (``canary=``; 0: none).
        canary_cost_low / canary_cost_high: their US dollars at the online list price, apart
            from ``cost_low`` / ``cost_high`` (``_plans.canary``); ``None`` when no price is
            known, 0 without a canary.
    """

    provider: Provider
    model: str
    requests: int
    distinct: int
    cached: int
    to_send: int
    bytes: int
    jobs: int
    input_tokens: int
    max_output_tokens: int
    tokens_exact: bool
    cost_low: float | None
    cost_high: float | None
    price: Price | None
    assumptions: tuple[str, ...] = field(default=())
    submitted: str = ""
    dest: str = ""
    canary: int = 0
    canary_cost_low: float | None = 0.0
    canary_cost_high: float | None = 0.0
    price_until: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (what ``--dry-run --json`` prints)."""
        data = asdict(self)
        data["assumptions"] = list(self.assumptions)
        if self.price is not None and self.price.until is not None:
            data["price"]["until"] = self.price.until.isoformat()
        return data


def estimate_tokens(body: Mapping[str, Any]) -> int:
    """Estimated input tokens of one request body: its text (every string value but
    structural ones such as ``role`` and ``type``) at about 4 characters per token."""
    return -(-_text_size(body) // CHARS_PER_TOKEN) + 3


def _text_size(value: Any, depth: int = 0) -> int:
    if isinstance(value, str):
        return len(value)
    if depth > 64:  # staged requests nest far less (the importer stops at 15)
        return 0
    if isinstance(value, Mapping):
        return sum(_text_size(v, depth + 1) for k, v in value.items() if k not in _STRUCTURE)
    if isinstance(value, list):
        return sum(_text_size(v, depth + 1) for v in value)
    return 0


def output_ceiling(provider: Provider, body: Mapping[str, Any]) -> int:
    """The most output tokens one request may write: its ``max_tokens`` (``maxOutputTokens``)."""
    return PROVIDERS[provider].ceiling(body)


@dataclass(slots=True)
class _Row:
    key: str
    exact: str
    size: int
    tokens: int
    ceiling: int
    line: StagedLine | None  # kept only for the exact count and the run's limits


def build_plan(
    provider: Provider,
    model: str,
    lines: Iterable[StagedLine],
    *,
    dedupe: bool,
    lookup: Callable[[list[str]], set[str]] | None = None,
    count: Callable[[list[Mapping[str, Any]]], list[int]] | None = None,
    prices: Iterable[Price] = (),
    shard_size: int | None = None,
    limits: Limits = DEFAULT_LIMITS,
    files: Mapping[str, int] | None = None,
    canary: int = 0,
    today: datetime.date,
) -> Plan:
    """The plan of submitting ``lines`` (validated as submit validates them).

    Args:
        dedupe: as on submit.
        lookup: exact digests -> those the answer cache holds (``cache=True``).
        count: request bodies -> their exact input tokens (``count_tokens=True``).
        prices: the caller's prices, before the shipped table.
        shard_size: plan a run cut in shards of this many keys (``None``: one submission,
            held to Vertex's limits for one job as submit is).
        limits: the limits submit holds the lines to (its staging's).
        files: the generation of each ``gs://`` object the requests name, as the cache keys
            them (``_cache.files``).
        canary: the first this many requests are sent online first (``_plans.canary``).
        today: the day the plan is made (UTC; the caller's clock): a price that holds only
            until an earlier day is not used (``prices.lapsed``).

    Raises:
        InvalidRequestError: what submit would refuse (a bad request, a repeated key, more than
            one job's rows or bytes for a single submission).
    """
    limits = job_limits(model, limits)  # one job's, as submit and a run's shards hold them
    if shard_size is not None:
        shard_size = min(shard_size, limits.rows)  # as a run cuts them (``_runs.shards``)
    rows: list[_Row] = []
    for line in lines:
        body = staged_body(json.loads(line.data))
        rows.append(
            _Row(
                key=line.key,
                exact=exact_digest(line.data, files)[1],
                size=len(line.data),
                tokens=estimate_tokens(body),
                ceiling=output_ceiling(provider, body),
                line=line if count is not None or shard_size is None else None,
            )
        )
    assumptions: list[str] = []
    cached_digests = lookup([r.exact for r in rows]) if lookup is not None and rows else set()
    sent: set[str] = set()
    send: list[_Row] = []
    shard_sends: list[int] = []
    cached = 0
    for index, row in enumerate(rows):
        if shard_size is not None and index % shard_size == 0:
            shard_sends.append(0)
            sent = set()  # a run dedupes within each shard
        if row.exact in cached_digests:
            cached += 1
            continue
        if dedupe and row.exact in sent:
            continue
        sent.add(row.exact)
        send.append(row)
        if shard_sends:
            shard_sends[-1] += 1
    if shard_size is None:
        tally = Tally(limits)  # a single submission is held to one job's limits, as submit is
        for row in send:
            assert row.line is not None
            tally.add(row.line, b"")
        jobs = 1 if send else 0
    else:
        jobs = sum(1 for n in shard_sends if n)
        if sum(r.size for r in send) > limits.input_bytes * jobs:
            assumptions.append("some shards pass 1 GB and would be cut further: more jobs")
    tokens = [r.tokens for r in send]  # each request's prompt: estimated, or counted
    exact = count is not None
    if count is not None and send:
        bodies = [staged_body(json.loads(r.line.data)) for r in send if r.line is not None]
        tokens = list(count(bodies))
    input_tokens = sum(tokens)
    ceiling = sum(r.ceiling for r in send)
    price, until = _price_on(model, prices, today)
    low = high = None
    over = 0
    if price is not None:  # each request in the band of its own prompt (``bands``)
        ceilings = [r.ceiling for r in send]
        low, high, over = band_cost(price, zip(tokens, ceilings, strict=True), BATCH_DISCOUNT)
    assumptions.extend(
        _assumptions(
            provider, model, price, exact=exact, dedupe=dedupe, cache=lookup is not None,
            until=until, today=today,
        )
    )  # fmt: skip
    if price is not None and price.above is not None:
        assumptions.append(band_said(price, over))
    distinct = len({r.exact for r in rows})
    if not dedupe and distinct < len(rows):
        assumptions.append(
            f"{len(rows) - distinct} repeated request(s) are sent and paid again: dedupe=True "
            "sends each once"
        )
    canary_low, canary_high = _canary(rows, canary, count, price, assumptions)
    return Plan(
        provider=provider,
        model=model,
        requests=len(rows),
        distinct=distinct,
        cached=cached,
        to_send=len(send),
        bytes=sum(r.size for r in send),
        jobs=jobs,
        input_tokens=input_tokens,
        max_output_tokens=ceiling,
        tokens_exact=exact,
        cost_low=low,
        cost_high=high,
        price=price,
        assumptions=tuple(assumptions),
        canary=canary,
        canary_cost_low=canary_low,
        canary_cost_high=canary_high,
        price_until=until,
    )


def _price_on(
    model: str, prices: Iterable[Price], today: datetime.date
) -> tuple[Price | None, str]:
    """The price of ``model`` on ``today``, and the last day (ISO) of the one found when it
    no longer holds (the price is then ``None``: the old figure is never used)."""
    price = price_of(model, prices)
    if price is not None and price.until is not None and lapsed(price, today):
        return None, price.until.isoformat()
    return price, ""


def _canary(
    rows: list[_Row],
    canary: int,
    count: Callable[[list[Mapping[str, Any]]], list[int]] | None,
    price: Price | None,
    assumptions: list[str],
) -> tuple[float | None, float | None]:
    """The canary's online cost: its rows the first ``canary`` given (before the cache and
    dedupe: each is sent), counted exactly when the plan counts."""
    if not canary:
        return 0.0, 0.0
    if canary > len(rows):
        raise too_few_requests(canary, len(rows))
    head = rows[:canary]
    tokens = [r.tokens for r in head]
    if count is not None:
        tokens = list(count([json.loads(r.line.data)["request"] for r in head if r.line]))
    assumptions.append(canary_said(canary))
    return canary_cost(zip(tokens, [r.ceiling for r in head], strict=True), price)


def submitted_plan(
    provider: Provider,
    model: str,
    lines: list[StagedLine],
    job: str,
    cached: int,
    prices: Iterable[Price] = (),
    said: str = "",
    *,
    today: datetime.date,
) -> Plan:
    """The plan of requests the id already holds as ``job``: nothing to send or pay.
    ``said`` says so in other words (a run's). ``today``: as ``build_plan`` takes it."""
    price, until = _price_on(model, prices, today)
    return Plan(
        provider=provider,
        model=model,
        requests=len(lines),
        distinct=len({exact_digest(line.data)[1] for line in lines}),
        cached=cached,
        to_send=0,
        bytes=0,
        jobs=0,
        input_tokens=0,
        max_output_tokens=0,
        tokens_exact=True,
        cost_low=0.0,
        cost_high=0.0,
        price=price,
        price_until=until,
        assumptions=(
            said
            or f"already submitted as job {job}: submitting these requests under this id again "
            "returns that job; nothing more is sent or paid",
        ),
        submitted=job,
    )


def _assumptions(
    provider: Provider,
    model: str,
    price: Price | None,
    *,
    exact: bool,
    dedupe: bool,
    cache: bool,
    until: str,
    today: datetime.date,
) -> list[str]:
    said = [
        "input tokens counted by the provider's count-tokens API on Vertex"
        if exact
        else f"input tokens estimated at {CHARS_PER_TOKEN} characters of request text per "
        "token (count_tokens=True counts them exactly)",
        PROVIDERS[provider].ceiling_said,
        "cost range: low = input only; high = every line writing its whole output ceiling",
    ]
    if until:  # a price was found, and holds no longer: its figure is not used
        said.append(
            f"no price known for model {model!r} on {today.isoformat()} (UTC, the day of this "
            f"plan): the price read holds until {until}; pass prices= for a cost"
        )
    elif price is None:
        said.append(
            f"no price known for model {model!r}: the shipped table (of {PRICES.date}) prices "
            "only the model families it lists (vertexbatch.PRICES); pass prices= for a cost"
        )
    else:
        said.append(
            f"batch price = {BATCH_DISCOUNT:.0%} of ${price.input:g} input / ${price.output:g} "
            f"output per million tokens (list prices matching {price.match!r}; shipped table "
            f"of {PRICES.date}, see vertexbatch.PRICES.source); "
            # a price with no band says nothing of a long prompt's rate: not modelled
            + (
                "regional rates are not modelled"
                if price.above is not None
                else "regional and long-context rates are not modelled"
            )
        )
        if price.until is not None:
            said.append(
                f"the price read holds until {price.until.isoformat()}: a plan made after it "
                "prices the model unknown"
            )
        said.append(cache_said(provider, price))
    if cache:
        said.append("cached keys are answered from the answer cache: nothing sent, nothing paid")
    if dedupe:
        said.append("dedupe: each distinct request is sent once")
    return said


def cache_said(provider: Provider, price: Price) -> str:
    """Why the estimate prices every input token at the batch input rate, and what cached
    tokens cost instead: a plan cannot know them, the service decides them while the job runs.

    Gemini's implicit cache is on by default: input tokens it finds cached are billed at the
    cache rate (90% off the online input rate), which takes precedence over the batch discount
    (the Gemini batch page: the two discounts do not stack). Whether a prefix is still cached
    when a row runs depends on the service's timing and eviction, so no count of cached tokens
    exists before the job. Claude's prompt cache is asked for per request (``cache_control``);
    which requests write and which read is likewise decided as the job runs."""

    known = [
        f"{name} ${value:g}"
        for name, value in (("write", price.cache_write), ("read", price.cache_read))
        if value is not None
    ]
    return PROVIDERS[provider].cache_said.format(
        rates=", ".join(known) or "not known for this model"
    )
