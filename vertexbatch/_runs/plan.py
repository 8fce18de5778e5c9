"""What one ``Run.advance`` step does: a pure planner, state in, actions out.

``Run`` reads the state of each unfinished shard (its attempts, and for a finished attempt the
keys still unsettled), asks ``plan_step`` what to do, and performs the actions. Keeping the
decision pure lets every rule be table-tested without GCS or Vertex:

- an attempt staged but not created is created, within the run's live-job budget;
- a finished attempt with retryable or missing keys gets another attempt while attempts remain;
- "finished" means *ended* (``ShardView.of``): a PAUSED job has not ended, as it may resume:
  it is live, counts against the budget, is never finished or resubmitted around, and past the
  deadline with the fallback it is cancelled before its keys are answered online;
- a shard whose latest attempt finished with nothing to retry (or no attempts left) is finished;
- past the deadline no attempt is made (an attempt staged but not created is not created: its
  shard is finished); with the online fallback, every shard not yet settled is answered online
  (its live jobs cancelled first: the step answers it only once they have ended, and counts
  them live until then).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .._vertex.jobs import ENDED_STATES, GONE_STATE

__all__ = ["Action", "Plan", "ShardView", "StepRules", "plan_step"]

ActionKind = Literal["create", "resubmit", "finish", "online"]


@dataclass(frozen=True, slots=True)
class ShardView:
    """What a step knows of one unfinished shard.

    Attributes:
        keys: the shard's key count.
        attempts: attempts staged so far (at least 1: the shard itself).
        created: the latest attempt has a job.
        terminal: that job has ended: it will not run again (a PAUSED job has not).
        unsettled: keys of that ended job that are retryable or missing.
    """

    keys: int
    attempts: int
    created: bool
    terminal: bool = False
    unsettled: int = 0

    @classmethod
    def of(cls, keys: int, attempts: int, state: str | None, unsettled: int = 0) -> ShardView:
        """The view of a shard whose latest attempt's job is in Vertex ``state`` (``None``:
        not created yet; ``GONE_STATE``: deleted once it ended)."""
        ended = state is not None and (state in ENDED_STATES or state == GONE_STATE)
        return cls(keys, attempts, state is not None, ended, unsettled if ended else 0)


@dataclass(frozen=True, slots=True)
class StepRules:
    """How this step may act.

    Attributes:
        act: ``advance`` (True) or ``status`` (False: create, resubmit and record nothing).
        late: the deadline has passed: no new attempt.
        online: late, acting, and with the online fallback.
        max_attempts: attempts a shard may have.
        live_budget: jobs of the run that may be live at once.
    """

    act: bool
    late: bool
    online: bool
    max_attempts: int
    live_budget: int


@dataclass(frozen=True, slots=True)
class Action:
    """One thing to do: ``shard`` indexes the views given; ``attempt`` is the attempt number
    to create or resubmit (the latest's for ``create``, the next one's for ``resubmit``)."""

    kind: ActionKind
    shard: int
    attempt: int = 0


@dataclass(frozen=True, slots=True)
class Plan:
    """The step's actions in shard order, and what it leaves pending.

    Attributes:
        actions: what to do. ``finish`` counts the shard's final outcomes (and records them
            when acting); ``online`` cancels the shard's live jobs, then, once all have ended,
            answers it online and finishes it.
        pending: keys of shards that stay unfinished whatever the actions do.
        live: the run's live jobs once the actions are done.
        created: jobs the actions create.
    """

    actions: tuple[Action, ...]
    pending: int
    live: int
    created: int


def plan_step(shards: Sequence[ShardView], rules: StepRules) -> Plan:
    """Decide one step for the run's unfinished shards (pure)."""
    live = sum(1 for v in shards if v.created and not v.terminal)
    actions: list[Action] = []
    pending = created = 0

    def may_create() -> bool:
        return rules.act and not rules.late and live < rules.live_budget

    for index, view in enumerate(shards):
        latest = view.attempts - 1
        if rules.online and not view.terminal:
            # Its live job is cancelled first, and counts until the step sees it ended.
            actions.append(Action("online", index))
            continue
        if not view.created:
            if may_create():
                actions.append(Action("create", index, latest))
                created += 1
                live += 1
            elif rules.late:  # never created now: its keys end as the deadline leaves them
                actions.append(Action("finish", index))
                continue
            pending += view.keys
            continue
        if not view.terminal:
            pending += view.keys
            continue
        if view.unsettled and rules.online:
            actions.append(Action("online", index))
            continue
        if view.unsettled and view.attempts < rules.max_attempts and not rules.late:
            if may_create():
                actions.append(Action("resubmit", index, latest + 1))
                created += 1
                live += 1
            pending += view.keys
            continue
        actions.append(Action("finish", index))
    return Plan(tuple(actions), pending, live, created)
