"""``--dry-run``: a ``Plan`` as the command prints it (pure)."""

from __future__ import annotations

from ._estimate import Plan

__all__ = ["plan_lines"]


def _dollars(value: float | None) -> str:
    return "unknown" if value is None else f"${value:,.4f}"


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
        ("cost (batch)", f"{_dollars(plan.cost_low)} to {_dollars(plan.cost_high)}"),
    ]
    width = max(len(name) for name, _ in rows)
    lines = [f"dry run of {what}: {plan.provider} model {plan.model}; nothing staged or created"]
    lines += [f"  {name:<{width}}  {value}" for name, value in rows]
    lines += ["assumptions:"] + [f"  - {a}" for a in plan.assumptions]
    return lines
