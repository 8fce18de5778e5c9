"""The run planner, table-tested: what one step does for each state of a run's shards (pure)."""

from __future__ import annotations

import pytest

from vertexbatch._runs.plan import Action, Plan, ShardView, StepRules, plan_step

ACT = StepRules(act=True, late=False, online=False, max_attempts=3, live_budget=4)
LOOK = StepRules(act=False, late=False, online=False, max_attempts=3, live_budget=0)
LATE = StepRules(act=True, late=True, online=False, max_attempts=3, live_budget=4)
ONLINE = StepRules(act=True, late=True, online=True, max_attempts=3, live_budget=4)

STAGED = ShardView(keys=10, attempts=1, created=False)
RUNNING = ShardView(keys=10, attempts=1, created=True)
CLEAN = ShardView(keys=10, attempts=1, created=True, terminal=True)
UNSETTLED = ShardView(keys=10, attempts=1, created=True, terminal=True, unsettled=2)
LAST_TRY = ShardView(keys=10, attempts=3, created=True, terminal=True, unsettled=2)
# PAUSED makes no progress on its own but may resume: live, not ended, whatever it answered.
PAUSED = ShardView.of(keys=10, attempts=1, state="JOB_STATE_PAUSED", unsettled=2)


@pytest.mark.parametrize(
    "shards, rules, expected",
    [
        pytest.param([], ACT, Plan((), 0, 0, 0), id="no-open-shard"),
        pytest.param(
            [STAGED], ACT, Plan((Action("create", 0, 0),), 10, 1, 1), id="staged-is-created"
        ),
        pytest.param([STAGED], LOOK, Plan((), 10, 0, 0), id="status-creates-nothing"),
        # Past the deadline nothing is created: a shard whose attempt has no job is finished
        # (its keys end exhausted), not left pending for ever.
        pytest.param(
            [STAGED], LATE, Plan((Action("finish", 0),), 0, 0, 0), id="late-finishes-uncreated"
        ),
        pytest.param(
            [ShardView(keys=10, attempts=2, created=False)],
            LATE,
            Plan((Action("finish", 0),), 0, 0, 0),
            id="late-finishes-an-uncreated-retry",
        ),
        pytest.param([RUNNING], ACT, Plan((), 10, 1, 0), id="running-waits"),
        pytest.param([CLEAN], ACT, Plan((Action("finish", 0),), 0, 0, 0), id="clean-finishes"),
        pytest.param([CLEAN], LOOK, Plan((Action("finish", 0),), 0, 0, 0), id="status-counts"),
        pytest.param(
            [UNSETTLED],
            ACT,
            Plan((Action("resubmit", 0, 1),), 10, 1, 1),
            id="unsettled-gets-next-attempt",
        ),
        pytest.param([UNSETTLED], LOOK, Plan((), 10, 0, 0), id="status-resubmits-nothing"),
        pytest.param(
            [UNSETTLED], LATE, Plan((Action("finish", 0),), 0, 0, 0), id="late-finishes-exhausted"
        ),
        pytest.param(
            [LAST_TRY], ACT, Plan((Action("finish", 0),), 0, 0, 0), id="no-attempt-left-finishes"
        ),
        pytest.param([STAGED], ONLINE, Plan((Action("online", 0),), 0, 0, 0), id="online-staged"),
        pytest.param(
            [RUNNING], ONLINE, Plan((Action("online", 0),), 0, 1, 0), id="online-cancels-live"
        ),
        pytest.param(
            [UNSETTLED], ONLINE, Plan((Action("online", 0),), 0, 0, 0), id="online-unsettled"
        ),
        pytest.param(
            [CLEAN], ONLINE, Plan((Action("finish", 0),), 0, 0, 0), id="online-clean-finishes"
        ),
        pytest.param([PAUSED], ACT, Plan((), 10, 1, 0), id="paused-waits-not-resubmitted"),
        pytest.param([PAUSED], LOOK, Plan((), 10, 1, 0), id="status-counts-paused-live"),
        pytest.param([PAUSED], LATE, Plan((), 10, 1, 0), id="late-paused-not-finished"),
        pytest.param(
            [PAUSED], ONLINE, Plan((Action("online", 0),), 0, 1, 0), id="online-cancels-paused"
        ),
        pytest.param(
            [PAUSED, STAGED],
            StepRules(act=True, late=False, online=False, max_attempts=3, live_budget=1),
            Plan((), 20, 1, 0),
            id="paused-holds-the-budget",
        ),
    ],
)
def test_plan_step(shards: list[ShardView], rules: StepRules, expected: Plan) -> None:
    """Each shard state under each kind of step gives the documented actions and counts."""
    assert plan_step(shards, rules) == expected


def test_live_budget_counts_the_whole_run() -> None:
    """Running jobs use the budget; creations and resubmissions stop once it is spent."""
    rules = StepRules(act=True, late=False, online=False, max_attempts=3, live_budget=3)
    plan = plan_step([RUNNING, STAGED, UNSETTLED, STAGED, CLEAN], rules)
    assert plan.actions == (
        Action("create", 1, 0),
        Action("resubmit", 2, 1),
        Action("finish", 4),
    )
    assert (plan.live, plan.created, plan.pending) == (3, 2, 40)


def test_online_frees_budget_for_no_one() -> None:
    """Past the deadline with the fallback, nothing is created even with budget to spare."""
    plan = plan_step([RUNNING, STAGED, UNSETTLED], ONLINE)
    assert [a.kind for a in plan.actions] == ["online", "online", "online"]
    assert (plan.live, plan.created, plan.pending) == (1, 0, 0)  # live until seen ended


@pytest.mark.parametrize(
    "state, expected",
    [
        (None, STAGED),
        ("JOB_STATE_RUNNING", RUNNING),
        ("JOB_STATE_CANCELLING", RUNNING),
        ("JOB_STATE_PAUSED", RUNNING),
        ("JOB_STATE_SUCCEEDED", UNSETTLED),
        ("JOB_STATE_PARTIALLY_SUCCEEDED", UNSETTLED),
        ("JOB_STATE_FAILED", UNSETTLED),
        ("JOB_STATE_CANCELLED", UNSETTLED),
        ("JOB_STATE_EXPIRED", UNSETTLED),
    ],
)
def test_a_view_is_ended_only_in_a_state_a_job_never_leaves(
    state: str | None, expected: ShardView
) -> None:
    """ShardView.of: PAUSED and CANCELLING are live (their unsettled keys are not yet known)."""
    assert ShardView.of(keys=10, attempts=1, state=state, unsettled=2) == expected
