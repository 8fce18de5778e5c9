"""A budget: a submission whose plan may cost more than it is refused before anything is
staged (pure: the plan is the local estimate of ``estimate.build_plan``).

The figure held to the budget is the plan's upper bound, ``Plan.cost_high``: the input tokens
(estimated at about 4 characters a token) plus every line writing its whole output ceiling
(``max_tokens``), at batch prices. The answer cache is not asked (that is a cloud call, and a
cache=True submission writes while it looks): cached keys count as sent. A model with no price
is refused with a budget, since its plan's cost is unknown; so is a model whose price read holds
only until a day before the plan's (``Plan.price_until``).
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Iterable, Iterator

from .._errors import InvalidRequestError
from .._requests.lines import StagedLine
from .._rules import DEFAULT_LIMITS, Limits
from .._values import Provider
from .estimate import Plan, build_plan
from .prices import MAX_PRICE, Price

__all__ = ["budgeted", "check_budget", "hold_to_budget"]

# The most a budget may be: past any plan (every price is at most MAX_PRICE a million tokens).
_MAX_BUDGET = MAX_PRICE * 1e9


def check_budget(budget: object) -> float | None:
    """``budget`` (US dollars) checked: ``None``, or a finite number from 0.

    Raises:
        InvalidRequestError (``field="budget"``): anything else."""
    if budget is None:
        return None
    if (
        isinstance(budget, bool)
        or not isinstance(budget, int | float)
        or not math.isfinite(budget)
        or not (0 <= budget <= _MAX_BUDGET)
    ):
        raise InvalidRequestError(
            f"budget must be a number of US dollars from 0, got {budget!r:.40}", field="budget"
        )
    return float(budget)


def hold_to_budget(plan: Plan, budget: float, what: str) -> None:
    """Refuse ``plan`` (of ``what``: ``submission 'ID'``, ``run 'ID'``) if its upper bound
    (with its canary's online calls) passes ``budget``, or if its cost is unknown.

    Raises:
        InvalidRequestError (``field="budget"``): naming the plan's figure and the budget."""
    band = None if plan.price is None else plan.price.above
    if plan.cost_high is None and plan.price_until:
        raise InvalidRequestError(
            f"{what}: budget=${budget:,.2f} given but the price read for model {plan.model!r} "
            f"holds until {plan.price_until}, before the day of this plan (UTC), so its cost "
            "is unknown; pass its current online list prices, prices=[vertexbatch.Price("
            f"{plan.model.partition('@')[0]!r}, input=..., output=...)] (--price "
            "MODEL=INPUT,OUTPUT on the command): nothing was staged",
            field="budget",
        )
    if plan.cost_high is None and band is not None:
        raise InvalidRequestError(
            f"{what}: budget=${budget:,.2f} given but some of its requests have prompts over "
            f"{band.prompt_tokens:,} tokens, where model {plan.model!r} is billed at rates no "
            "page we read gives, so its cost is unknown; pass its prices, "
            "prices=[vertexbatch.Price(..., above=vertexbatch.PriceBand("
            f"{band.prompt_tokens}, input=..., output=...))]: nothing was staged",
            field="budget",
        )
    if plan.cost_high is None:
        raise InvalidRequestError(
            f"{what}: budget=${budget:,.2f} given but no price is known for model "
            f"{plan.model!r}, so its cost is unknown; pass its online list prices, "
            f"prices=[vertexbatch.Price({plan.model.partition('@')[0]!r}, input=..., "
            "output=...)] (--price MODEL=INPUT,OUTPUT on the command): nothing was staged",
            field="budget",
        )
    canary = plan.canary_cost_high or 0.0  # the canary's online calls (``_plans.canary``)
    if plan.cost_high + canary > budget:
        raise InvalidRequestError(
            f"{what}: its plan costs up to ${plan.cost_high:,.4f} at batch prices "
            f"({plan.to_send} line(s), {plan.input_tokens:,} input tokens "
            f"{'counted' if plan.tokens_exact else 'estimated'}, every line writing its whole "
            f"output ceiling of {plan.max_output_tokens:,} tokens in all)"
            + (f" and its canary up to ${canary:,.4f} online" if plan.canary else "")
            + f", over the budget of ${budget:,.2f}: nothing was staged",
            field="budget",
        )


def budgeted(
    provider: Provider,
    model: str,
    lines: Iterable[StagedLine],
    budget: float,
    what: str,
    *,
    prices: Iterable[Price] = (),
    dedupe: bool = False,
    shard_size: int | None = None,
    limits: Limits = DEFAULT_LIMITS,
    canary: int = 0,
    today: datetime.date,
) -> Iterator[StagedLine]:
    """``lines``, held in memory and planned (their first ``canary`` to be sent online
    first), once their plan is within ``budget``; their submission goes on with them (a
    generator of requests is read whole first). ``today``: the day of the plan (UTC), as
    ``build_plan`` takes it.

    Raises:
        InvalidRequestError: what the plan refuses (as submit would), or over the budget."""
    held = list(lines)
    plan = build_plan(
        provider,
        model,
        held,
        dedupe=dedupe,
        prices=prices,
        shard_size=shard_size,
        limits=limits,
        canary=canary,
        today=today,
    )
    hold_to_budget(plan, budget, what)
    return iter(held)
