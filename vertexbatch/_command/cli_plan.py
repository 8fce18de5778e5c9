"""The command's ``--dedupe``, ``--cache``, ``--schema`` and ``--dry-run``: the options, and
plans printed.

``PayOnce`` holds the ``SubmitOptions`` the command hands to the ``Client`` method its provider's
row names (``submit_claude``, ``plan_gemini``, ...); a plan is printed as a table.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import timedelta
from typing import Any

import click

from .._client import Client
from .._errors import InvalidRequestError
from .._json import load_json
from .._plans.budget import check_budget
from .._plans.estimate import Plan
from .._plans.prices import Price
from .._providers import by_command
from .._schemas.check import MAX_SCHEMA_BYTES, Schema, schema_of
from .._submission.options import SubmitOptions
from .cli_options import Seconds
from .cli_price import parse_price

__all__ = ["PayOnce", "echo_plan", "pay_options", "plan_lines", "plan_of", "plan_options"]


def _unknown_cost(plan: Plan) -> str:
    """Why a plan's cost is unknown: no price, one that holds no longer, or requests in a band
    whose rates are unknown."""
    if plan.price_until:
        return f"unknown (the price read holds until {plan.price_until})"
    band = None if plan.price is None else plan.price.above
    if band is None:
        return "unknown (no price known)"
    return f"unknown (requests over {band.prompt_tokens:,} prompt tokens: rates not known)"


def _dollars(value: float | None) -> str:
    return "unknown" if value is None else f"${value:,.4f}"


# The plan speaks Python (its assumptions name the keywords of plan_*); the command prints the
# flags that do the same.
_AS_FLAGS = (
    ("count_tokens=True", "--count-tokens"),
    (
        "pass prices= for a cost",
        "pass --price MODEL=INPUT,OUTPUT (list dollars per million tokens)",
    ),
    ("dedupe=True", "--dedupe"),
    ("vertexbatch.PRICES.source", "PRICES.source in vertexbatch/_plans/prices.py"),
    ("(vertexbatch.PRICES)", "(PRICES in vertexbatch/_plans/prices.py)"),
)


def in_flags(plan: Plan) -> Plan:
    """The plan with its assumptions worded for the command: its flags, not Python keywords."""
    said = []
    for assumption in plan.assumptions:
        for python, flag in _AS_FLAGS:
            assumption = assumption.replace(python, flag)
        said.append(assumption)
    return dataclasses.replace(plan, assumptions=tuple(said))


def plan_lines(plan: Plan, what: str) -> list[str]:
    """The table ``--dry-run`` prints (``--json`` prints ``Plan.to_dict()``)."""
    tokens = "counted" if plan.tokens_exact else "estimated"
    rows = [
        ("requests", f"{plan.requests:,}"),
        ("distinct", f"{plan.distinct:,}"),
        ("cached", f"{plan.cached:,}"),
        ("to send", f"{plan.to_send:,}"),
        ("bytes", f"{plan.bytes:,}"),
        ("jobs", f"{plan.jobs:,}"),
        ("input tokens", f"{plan.input_tokens:,} ({tokens})"),
        ("output ceiling", f"{plan.max_output_tokens:,} tokens"),
        (
            "cost (batch)",
            _unknown_cost(plan)
            if plan.cost_low is None
            else f"{_dollars(plan.cost_low)} to {_dollars(plan.cost_high)}",
        ),
    ]
    if plan.canary:
        cost = (
            "cost unknown"
            if plan.canary_cost_low is None
            else f"{_dollars(plan.canary_cost_low)} to {_dollars(plan.canary_cost_high)}"
        )
        rows.append(("canary", f"{plan.canary:,} sent online first ({cost}, online prices)"))
    width = max(len(name) for name, _ in rows)
    lines = [f"dry run of {what}: {plan.provider} model {plan.model}; nothing staged or created"]
    if plan.submitted:
        rows.append(("submitted", f"{plan.submitted} (submitting again returns it)"))
        width = max(width, len("submitted"))
    if plan.dest:
        rows.append(("dest", plan.dest))
    lines += [f"  {name:<{width}}  {value}" for name, value in rows]
    lines += ["assumptions:"] + [f"  - {a}" for a in plan.assumptions]
    return lines


def plan_of(
    client: Client,
    provider: str,
    submission_id: str,
    model: str,
    lines: Any,
    pay: PayOnce,
    shard_size: int | None = None,
    **tasked: Any,
) -> Plan:
    """The plan ``--dry-run`` prints: ``plan_claude`` or ``plan_gemini`` with the options
    (``tasked``: ``task=``, a run task's part; ``fallback_tier=``, a run's)."""
    planner: Callable[..., Plan] = getattr(client, by_command(provider).method("plan"))
    return planner(
        submission_id,
        model,
        lines,  # an iterator of requests, or a BigQuerySource
        count_tokens=pay.count_tokens,
        shard_size=shard_size,
        **tasked,
        **pay.submit_arguments(),
    )


def echo_plan(plan: Plan, what: str, as_json: bool) -> None:
    plan = in_flags(plan)
    if as_json:
        click.echo(json.dumps(plan.to_dict(), allow_nan=False))  # JSON never holds NaN
    else:
        click.echo("\n".join(plan_lines(plan, what)))


@dataclass(frozen=True, slots=True)
class PayOnce:
    """What ``--dedupe``, ``--cache``, ``--cache-ttl``, ``--dry-run`` and ``--count-tokens`` ask:
    the submission's ``SubmitOptions`` (the first three), and how the command uses them."""

    options: SubmitOptions
    dry_run: bool
    count_tokens: bool
    prices: tuple[Price, ...] = ()  # --price, for the plan

    def submit_arguments(self) -> dict[str, Any]:
        """The keyword arguments ``submit_*``, ``run_*`` and ``plan_*`` take from ``options``:
        each of its fields, by its name (no ``dest``: the GCS folder, as the keyword's ``None``;
        no ``progress``: the command passes its own)."""
        given = {field.name: getattr(self.options, field.name) for field in fields(self.options)}
        return {k: v for k, v in given.items() if k not in ("dest", "progress") or v}


def _schema_file(path: str | None) -> Schema | None:
    """``--schema FILE``: a JSON schema file, checked as ``schema=`` checks it."""
    if path is None:
        return None
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_SCHEMA_BYTES + 1)  # a huge file is refused, never read whole
    except OSError as exc:
        raise click.BadParameter(
            f"{path} cannot be read ({type(exc).__name__})", param_hint="--schema"
        ) from None
    if len(raw) > MAX_SCHEMA_BYTES:
        raise click.BadParameter(
            f"{path} is over {MAX_SCHEMA_BYTES:,} bytes, the most a schema may be",
            param_hint="--schema",
        )
    try:
        data = load_json(raw)  # bounded depth: a deeply nested file is a ValueError, not a crash
    except ValueError:
        raise click.BadParameter(
            f"{path} is not a JSON file (not UTF-8, not JSON, or nested too deeply)",
            param_hint="--schema",
        ) from None
    try:
        return schema_of(data)
    except InvalidRequestError as exc:
        raise click.BadParameter(str(exc), param_hint="--schema") from None


def pay_options(command: Any, *, planning: bool = False) -> Any:
    """The ten options, handed to ``command`` as one ``pay: PayOnce``; ``planning`` (the
    ``plan`` command, ``plan_options``): nine, without ``--dry-run``, which it always is."""

    @functools.wraps(command)
    def with_pay(
        *args: Any,
        dedupe: bool,
        cache: bool,
        cache_ttl: float | None,
        schema: str | None,
        count_tokens: bool,
        price: tuple[str, ...],
        no_check_fields: bool,
        budget: float | None,
        canary: int,
        dry_run: bool = planning,
        **kwargs: Any,
    ) -> Any:
        ttl = None if cache_ttl is None else timedelta(seconds=cache_ttl)
        if price and not dry_run and budget is None:
            raise click.BadParameter(
                "prices only a plan or a budget: add --dry-run or --budget", param_hint="--price"
            )
        try:
            budget = check_budget(budget)
        except InvalidRequestError as exc:
            raise click.BadParameter(str(exc), param_hint="--budget") from None
        prices = tuple(parse_price(p) for p in price)
        options = SubmitOptions(
            dedupe, cache, ttl, _schema_file(schema), check_fields=not no_check_fields,
            budget=budget, prices=prices, canary=canary,
        )  # fmt: skip
        pay = PayOnce(options, dry_run, count_tokens, prices)
        return command(*args, pay=pay, **kwargs)

    planned = "" if planning else "With --dry-run: "
    for option in (
        click.option(
            "--canary",
            type=click.IntRange(min=0),
            default=0,
            metavar="N",
            help="Send the first N requests to the model online (Standard PayGo, online prices) "
            "before staging anything: one the model refuses for good (400, 404) refuses the "
            "submission, naming its key; a transient failure is a warning. An id that already "
            "holds a submission or run sends none; N may not pass the requests given. "
            "Default 0: none.",
        ),
        click.option(
            "--budget",
            type=float,
            default=None,
            metavar="DOLLARS",
            help="Refuse, before staging anything, a submission whose plan may cost more than "
            "this many US dollars at batch prices (the plan's upper bound; an unpriced model "
            "is refused: give --price).",
        ),
        click.option(
            "--no-check-fields",
            is_flag=True,
            help="Stage fields the installed SDK's request types do not name (a parameter "
            "newer than the SDK); by default such a request is refused before staging.",
        ),
        click.option(
            "--price",
            multiple=True,
            metavar="MODEL=INPUT,OUTPUT[,...]",
            help=f"{planned}MODEL's online list price in US dollars per million input and "
            "output tokens, as the pricing page prints it (a model family, e.g. "
            "claude-opus-4-1=15,75); batch bills half. Then, optional, as Price names them: "
            "cache_read=R, cache_write=W, until=YYYY-MM-DD (the last day the price holds, "
            "UTC: a plan after it prices the model unknown), and last above=N:INPUT,OUTPUT, "
            "the rates of prompts over N tokens, with the band's own cache_read= and "
            "cache_write= after them (e.g. claude-haiku-5-5=0.1,0.5,above=100000:0.5,2.5). "
            "Over the shipped table; repeatable.",
        ),
        click.option(
            "--schema",
            type=click.Path(dir_okay=False),
            default=None,
            metavar="FILE",
            help="A JSON schema file every answer must follow (results show the parsed value).",
        ),
        click.option(
            "--count-tokens",
            is_flag=True,
            help=f"{planned}count input tokens with the provider's count-tokens API.",
        ),
        *(
            ()
            if planning
            else (
                click.option(
                    "--dry-run",
                    is_flag=True,
                    help="Print the plan (requests, distinct, to send, jobs, tokens, cost); "
                    "stage nothing (the same as 'vertexbatch plan').",
                ),
            )
        ),
        click.option(
            "--cache-ttl",
            type=Seconds(above=True),
            default=None,
            help="With --cache: entries older than this many seconds are misses.",
        ),
        click.option(
            "--cache",
            is_flag=True,
            help="Answer from the answer cache what it holds; fill it with the ok answers.",
        ),
        click.option(
            "--dedupe",
            is_flag=True,
            help="Stage equal requests once; every key still gets the (shared) answer.",
        ),
    ):
        with_pay = option(with_pay)
    return with_pay


def plan_options(command: Any) -> Any:
    """``pay_options`` for ``vertexbatch plan``: every option of ``submit --dry-run`` but
    ``--dry-run`` itself."""
    return pay_options(command, planning=True)
