"""A canary's figures in a plan: the requests sent online first and their cost (pure).

``canary=N`` sends the first ``N`` requests, in the order given, to the model online at
Standard PayGo before the batch job is staged (``_submission.canary``); they are staged and
paid again in the batch job. A plan shows them apart from the batch figures: ``Plan.canary``
and ``Plan.canary_cost_low`` / ``canary_cost_high``, at the online list price (no batch
discount), input only and input plus every canary request writing its whole output ceiling;
a budget (``_plans.budget``) holds the batch's upper bound plus the canary's.
"""

from __future__ import annotations

from collections.abc import Iterable

from .._errors import InvalidRequestError
from .bands import band_cost
from .prices import Price

__all__ = ["canary_cost", "canary_said", "too_few_requests"]


def too_few_requests(canary: int, given: int) -> InvalidRequestError:
    """The refusal of a canary of more requests than were given (never clamped)."""
    return InvalidRequestError(
        f"canary={canary} is more than the {given} request(s) given: a canary is some of the "
        "requests, sent online first",
        field="canary",
    )


def canary_cost(
    requests: Iterable[tuple[int, int]], price: Price | None
) -> tuple[float | None, float | None]:
    """US dollars of ``requests``, each ``(prompt tokens, output ceiling)`` in its own price
    band (``bands``), at the online list price: input only, and input plus the whole output
    ceiling; ``(None, None)`` without a price or in a band whose rates are not known."""
    if price is None:
        return None, None
    low, high, _ = band_cost(price, requests, 1.0)
    return low, high


def canary_said(canary: int) -> str:
    """What a plan's canary figures rest on."""
    return (
        f"canary: the first {canary} request(s) are sent online first, at Standard PayGo (the "
        "online list price, no batch discount), and staged and paid again in the batch job; "
        "canary cost: low = input only, high = every canary request writing its whole output "
        "ceiling (not part of cost_low / cost_high; a budget holds both); an id that already "
        "holds a submission or run sends none"
    )
