"""Scriptable faults of the local Vertex REST service (thread-safe).

Call faults: the next N calls of an operation fail before taking effect (`fail`) or after it
(`lose_response`); every call of an operation is served only after a pause (`delay`, e.g. slow
online `rawPredict`/`generateContent` calls, so that concurrent callers overlap); the next N
calls of an operation are held, before or after they take effect, until `unblock` (`block`,
with `wait_blocked` to learn that a call is held: a test can then kill the caller at that very
point). Job faults apply to jobs created from now on whose display name matches (None matches
every job): `list_lag`, `hold` (QUEUED, PENDING, RUNNING or PAUSED until released), `fail_job`,
`late_cancel` (a cancel that comes too late: CANCELLING, then SUCCEEDED or FAILED). `deny`
takes permissions out of Resource Manager's testIamPermissions answers. `refuse_key` and
`refuse_account` make a create naming that CMEK key or service account fail as Vertex fails one
whose service agent may not use the key (400 FAILED_PRECONDITION) or whose caller may not act as
the account (403 PERMISSION_DENIED). `reset` clears everything and releases held jobs and calls.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

__all__ = ["OPS", "Faults", "Hold", "JobFault", "JobPlan", "LateCancel"]

OPS = frozenset(
    {
        "create",
        "get",
        "list",
        "cancel",
        "delete",
        "generateContent",
        "rawPredict",
        "countTokens",
        "countTokensClaude",
        "getPublisherModel",
        "getProject",
        "testIamPermissions",
    }
)


HoldState = Literal["QUEUED", "PENDING", "RUNNING", "PAUSED"]
HOLD_STATES: tuple[str, ...] = ("QUEUED", "PENDING", "RUNNING", "PAUSED")


@dataclass(frozen=True, slots=True)
class Hold:
    """Keep a job QUEUED (from its creation) or PENDING, or RUNNING or PAUSED after `after_rows`
    rows, until released or cancelled."""

    state: HoldState
    after_rows: int = 0


@dataclass(frozen=True, slots=True)
class LateCancel:
    """A cancel that comes too late: the job shows CANCELLING, then ends `ends` (SUCCEEDED: it
    runs every row and writes them all; FAILED: it stops at its next row with this error,
    keeping the rows done)."""

    ends: Literal["SUCCEEDED", "FAILED"]
    code: int = 13
    message: str = "Internal error encountered."


@dataclass(frozen=True, slots=True)
class JobFault:
    """End a job FAILED with this error: as it starts RUNNING (after_rows None), or once it ran
    after_rows rows (shown in its counts), writing no output at all."""

    code: int
    message: str
    after_rows: int | None = None


@dataclass(frozen=True, slots=True)
class JobPlan:
    """The job faults a new job gets at creation."""

    list_lag: int = 0
    hold: Hold | None = None
    fail: JobFault | None = None
    late_cancel: LateCancel | None = None


@dataclass(slots=True)
class _CallFault:
    status: int
    remaining: int


@dataclass(slots=True, eq=False)
class _Block:
    """One `block` rule: the calls it still catches, the calls it holds now, and how it ended."""

    when: Literal["before", "after"]
    remaining: int
    held: int = 0
    released: bool = False
    drop: bool = False


def _status_of(code: int) -> str:
    """The gRPC status a refused key or account's create carries with this HTTP code."""
    return {403: "PERMISSION_DENIED", 404: "NOT_FOUND"}.get(code, "FAILED_PRECONDITION")


def _check_op(op: str) -> None:
    if op not in OPS:
        raise ValueError(f"op must be one of {sorted(OPS)}")


class Faults:
    """Faults of one LocalStack's REST service; every method is safe to call from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Held calls wait on it; `wait_blocked` waits on it for them.
        self._blocked = threading.Condition(self._lock)
        self._blocks: dict[str, list[_Block]] = {}
        self._before: dict[str, list[_CallFault]] = {}
        self._after: dict[str, list[_CallFault]] = {}
        self._delays: dict[str, float] = {}
        self._list_lag = 0
        self._holds: list[tuple[str | None, Hold]] = []
        self._failures: list[tuple[str | None, JobFault]] = []
        self._late_cancels: list[tuple[str | None, LateCancel]] = []
        self._release_listeners: list[Callable[[str | None], None]] = []
        self._denied: set[str] = set()
        self._refused_keys: dict[str, tuple[int, str]] = {}
        self._refused_accounts: dict[str, tuple[int, str]] = {}

    def refuse_key(self, kms_key_name: str, status: int = 400) -> None:
        """Every create whose `encryptionSpec.kmsKeyName` is this key fails with `status`
        (400 FAILED_PRECONDITION by default: the Vertex AI service agent may not use it)."""
        with self._lock:
            self._refused_keys[kms_key_name] = (status, _status_of(status))

    def refuse_account(self, service_account: str, status: int = 403) -> None:
        """Every create whose `serviceAccount` is this account fails with `status` (403
        PERMISSION_DENIED by default: the caller may not act as it)."""
        with self._lock:
            self._refused_accounts[service_account] = (status, _status_of(status))

    def refusal(self, kms_key_name: str, service_account: str) -> tuple[int, str, str] | None:
        """The (code, status, message) a create with this key and account fails with, if any."""
        with self._lock:
            key = self._refused_keys.get(kms_key_name) if kms_key_name else None
            account = self._refused_accounts.get(service_account) if service_account else None
        if key is not None:
            return (
                *key,
                f"Failed to use the Cloud KMS key {kms_key_name}: the Vertex AI service agent "
                "does not have permission 'cloudkms.cryptoKeyVersions.useToEncrypt' on it, or "
                "the key is disabled or does not exist.",
            )
        if account is not None:
            return (
                *account,
                f"Permission 'iam.serviceAccounts.actAs' denied on service account "
                f"{service_account} (or it may not exist).",
            )
        return None

    def deny(self, *permissions: str) -> None:
        """Resource Manager's testIamPermissions on the project leaves these out from now on
        (e.g. "aiplatform.batchPredictionJobs.create"): the caller seems not to hold them."""
        with self._lock:
            self._denied.update(permissions)

    def denied(self) -> frozenset[str]:
        """The permissions `deny` took away."""
        with self._lock:
            return frozenset(self._denied)

    def fail(self, op: str, status: int = 503, times: int = 1) -> None:
        """The next `times` calls of op get HTTP `status` in the Google envelope, with no effect."""
        _check_op(op)
        with self._lock:
            self._before.setdefault(op, []).append(_CallFault(status, times))

    def lose_response(self, op: str, times: int = 1, status: int = 503) -> None:
        """The next `times` calls of op take effect, then the caller gets HTTP `status`."""
        _check_op(op)
        with self._lock:
            self._after.setdefault(op, []).append(_CallFault(status, times))

    def delay(self, op: str, seconds: float) -> None:
        """Every call of op from now on waits `seconds` before it is served (0: no pause)."""
        _check_op(op)
        if seconds < 0:
            raise ValueError("seconds must be >= 0")
        with self._lock:
            self._delays[op] = seconds

    def block(
        self, op: str, *, when: Literal["before", "after"] = "before", times: int = 1
    ) -> None:
        """Hold the next `times` calls of op until `unblock`, `reset` or the stack stops.

        A call held "before" has not taken effect yet; one held "after" has (a created job
        exists) and its caller has no answer yet. `wait_blocked` tells when a call is held.
        """
        _check_op(op)
        if when not in ("before", "after"):
            raise ValueError('when must be "before" or "after"')
        if times < 1:
            raise ValueError("times must be >= 1")
        with self._lock:
            self._blocks.setdefault(op, []).append(_Block(when, times))

    def wait_blocked(self, op: str, count: int = 1, timeout: float = 30.0) -> None:
        """Return once `count` calls of op are held by `block` at the same time.

        Raises:
            TimeoutError: fewer are held after `timeout` seconds.
        """
        _check_op(op)

        def held() -> bool:
            return sum(b.held for b in self._blocks.get(op, [])) >= count

        with self._blocked:
            if not self._blocked.wait_for(held, timeout):
                raise TimeoutError(f"{count} {op} call(s) not held after {timeout} s")

    def unblock(self, op: str | None = None, *, drop: bool = False) -> None:
        """Stop blocking op (None: every op) and let the calls held now go on.

        With `drop=True` a held call is answered 503 instead; one held "before" then never takes
        effect, as if it had not reached the service (its caller is typically dead by then).
        Returns once the calls held now have left the block.
        """
        if op is not None:
            _check_op(op)
        with self._blocked:
            released = [
                rule
                for name in ([op] if op is not None else list(self._blocks))
                for rule in self._blocks.pop(name, [])
            ]
            for rule in released:
                rule.released, rule.drop = True, drop
            self._blocked.notify_all()
            self._blocked.wait_for(lambda: not any(rule.held for rule in released), 10.0)

    def list_lag(self, lists: int = 2) -> None:
        """Jobs created from now on appear in list results only after `lists` more list calls."""
        if lists < 0:
            raise ValueError("lists must be >= 0")
        with self._lock:
            self._list_lag = lists

    def hold(
        self,
        display_name: str | None = None,
        state: HoldState = "PENDING",
        after_rows: int = 0,
    ) -> None:
        """Matching jobs created from now on stay in `state` until released or cancelled.

        "QUEUED": the job is created JOB_STATE_QUEUED (the create response says so) and goes
        PENDING once released. "PENDING": it stays PENDING. "RUNNING" and "PAUSED": it first
        runs `after_rows` rows, writes them as an incremental file and shows them in its counts,
        then stays RUNNING, or shows JOB_STATE_PAUSED (RUNNING again once released).
        """
        if state not in HOLD_STATES:
            raise ValueError(f"state must be one of {HOLD_STATES}")
        if after_rows < 0 or (state in ("QUEUED", "PENDING") and after_rows):
            raise ValueError("after_rows must be >= 0, and 0 when holding QUEUED or PENDING")
        with self._lock:
            self._holds.append((display_name, Hold(state, after_rows)))

    def release(self, display_name: str | None = None) -> None:
        """Stop holding jobs (matching display_name; None: all), including those held now."""
        with self._lock:
            if display_name is None:
                self._holds.clear()
            else:
                self._holds = [(n, h) for n, h in self._holds if n != display_name]
            listeners = list(self._release_listeners)
        for listener in listeners:
            listener(display_name)

    def fail_job(
        self,
        display_name: str | None = None,
        code: int = 13,
        message: str = "Internal error",
        *,
        after_rows: int | None = None,
    ) -> None:
        """Matching jobs created from now on end JOB_STATE_FAILED with this error.

        With `after_rows=None` a job fails as soon as it is RUNNING. With a number it first runs
        that many rows (every row, when it has fewer), which show in its completion counts, then
        fails without writing any output: what Vertex does when its service agent cannot write
        the output (code 7) or the export fails (code 13).
        """
        if after_rows is not None and after_rows < 0:
            raise ValueError("after_rows must be >= 0 or None")
        with self._lock:
            self._failures.append((display_name, JobFault(code, message, after_rows)))

    def late_cancel(
        self,
        display_name: str | None = None,
        ends: Literal["SUCCEEDED", "FAILED"] = "SUCCEEDED",
        code: int = 13,
        message: str = "Internal error encountered.",
    ) -> None:
        """A cancel of a matching job created from now on comes too late: the job shows
        JOB_STATE_CANCELLING, then ends `ends` instead of CANCELLED.

        "SUCCEEDED": it runs every row and writes them all. "FAILED": it stops at its next row
        with error `code`/`message`, keeping the rows done so far. Either way a held job stays
        held (showing CANCELLING) until released, so a test can see the CANCELLING state.
        """
        if ends not in ("SUCCEEDED", "FAILED"):
            raise ValueError('ends must be "SUCCEEDED" or "FAILED"')
        with self._lock:
            self._late_cancels.append((display_name, LateCancel(ends, code, message)))

    def reset(self) -> None:
        """Clear every fault, release every held job and let every held call go on."""
        with self._lock:
            self._before.clear()
            self._after.clear()
            self._delays.clear()
            self._list_lag = 0
            self._failures.clear()
            self._late_cancels.clear()
            self._denied.clear()
            self._refused_keys.clear()
            self._refused_accounts.clear()
        self.unblock()
        self.release(None)

    # Used by the service.

    def on_release(self, listener: Callable[[str | None], None]) -> None:
        """Call listener(display_name) whenever jobs are released."""
        with self._lock:
            self._release_listeners.append(listener)

    def _take(self, table: dict[str, list[_CallFault]], op: str) -> int | None:
        with self._lock:
            queue = table.get(op)
            if not queue:
                return None
            fault = queue[0]
            fault.remaining -= 1
            if fault.remaining <= 0:
                queue.pop(0)
            return fault.status

    def pass_block(self, op: str, when: Literal["before", "after"]) -> bool:
        """Hold this call of op here while a matching `block` rule catches it.

        Returns whether the call goes on (False: `unblock(drop=True)` dropped it).
        """
        with self._blocked:
            rule = next(
                (b for b in self._blocks.get(op, []) if b.when == when and b.remaining > 0), None
            )
            if rule is None:
                return True
            rule.remaining -= 1
            rule.held += 1
            self._blocked.notify_all()
            self._blocked.wait_for(lambda: rule.released)
            rule.held -= 1
            self._blocked.notify_all()  # `unblock` waits for the held calls to leave
            return not rule.drop

    def take_before(self, op: str) -> int | None:
        """The status to fail this call of op with before it takes effect, if any."""
        return self._take(self._before, op)

    def delay_of(self, op: str) -> float:
        """The seconds to pause this call of op before serving it."""
        with self._lock:
            return self._delays.get(op, 0.0)

    def take_after(self, op: str) -> int | None:
        """The status to answer this call of op with after it took effect, if any."""
        return self._take(self._after, op)

    def plan_job(self, display_name: str) -> JobPlan:
        """The job faults for a job created now (the latest matching rule wins)."""
        with self._lock:
            hold = next(
                (h for n, h in reversed(self._holds) if n is None or n == display_name), None
            )
            fail = next(
                (f for n, f in reversed(self._failures) if n is None or n == display_name), None
            )
            late = next(
                (c for n, c in reversed(self._late_cancels) if n is None or n == display_name),
                None,
            )
            return JobPlan(list_lag=self._list_lag, hold=hold, fail=fail, late_cancel=late)
