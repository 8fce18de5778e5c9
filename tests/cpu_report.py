"""Where the suite's CPU goes: a per-test CPU report, written when ``VERTEXBATCH_CPU_REPORT`` names
a file (CONTRIBUTING.md, "The suite's time").

The suite is CPU-bound on a two-core machine, so wall-clock durations (``--durations``) mislead:
under four xdist workers a test that waits looks as slow as one that computes. Each test's cost
here is the CPU its worker spent while it ran (set-up, call and tear-down: the emulator's threads
run in the worker, so their work is counted) plus the CPU of the child processes that ended
during it (the command, examples, benchmark children; a child forked by
tests.helpers.child_processes, as it ends). A long-lived child (fake-gcs-server, the BigQuery
emulator) ends in the tear-down of its worker's last test, after the session's work: what
children end there is kept apart (``servers``) and printed apart, never charged to that test.
Each test's wall time is kept too. Each worker appends one JSON line per test to the file;
`python -m tests.cpu_report FILE` prints the heaviest tests, the longest, the CPU per folder.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

ENV = "VERTEXBATCH_CPU_REPORT"
# The children's CPU that ended in the tear-down of a worker's last test (the session's servers).
_SERVERS: dict[str, float] = {}


def _children_cpu() -> float:
    """Ended children's CPU, and the CPU so far of the server the tests' processes fork from and
    of the children it reaped (``tests.helpers.child_processes_cpu``): a test's forked children
    are the server's, counted here as they end, not when the server ends with the session."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    # Never imported from here (its import would count as a test's CPU): without it, no server.
    helpers = sys.modules.get("tests.helpers")
    forked = helpers.child_processes_cpu() if helpers is not None else 0.0
    return usage.ru_utime + usage.ru_stime + forked


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    if nextitem is not None or not os.environ.get(ENV):
        return (yield)
    before = _children_cpu()
    try:
        return (yield)
    finally:  # the session-scoped fixtures stopped: fake-gcs-server, bqemulator, ...
        _SERVERS[item.nodeid] = _children_cpu() - before


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    target = os.environ.get(ENV)
    if not target:
        return (yield)
    own, children, started = time.process_time(), _children_cpu(), time.monotonic()
    try:
        return (yield)
    finally:
        servers = _SERVERS.pop(item.nodeid, 0.0)
        line = {
            "test": item.nodeid,
            "cpu": round(time.process_time() - own, 3),
            "children": round(_children_cpu() - children - servers, 3),
            "wall": round(time.monotonic() - started, 3),
            # when it ended and on which worker: the timeline shows a worker idle at the end
            "end": round(time.time(), 3),
            "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
        }
        if servers:
            line["servers"] = round(servers, 3)
        with open(target, "a", encoding="utf-8") as report:  # one short append per test
            report.write(json.dumps(line) + "\n")


def summary(path: Path, top: int = 40) -> str:
    """The heaviest tests and the CPU seconds per folder, from a report file."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    total = {r["test"]: r["cpu"] + r["children"] for r in rows}
    folders: Counter[str] = Counter()
    for test, cpu in total.items():
        folders[test.split("::")[0].rsplit("/", 1)[0]] += cpu
    spent = sum(total.values()) + sum(r.get("servers", 0.0) for r in rows)
    out = [f"{len(rows)} tests, {spent:.0f} CPU-s (own + ended children + servers)", ""]
    out += [f"{cpu:8.1f}  {test}" for test, cpu in Counter(total).most_common(top)]
    servers = [r for r in rows if r.get("servers")]
    if servers:
        out += [
            "",
            "The session's servers (fake-gcs-server, bqemulator), stopped after each worker's",
        ]
        out += ["last test (charged to no test):"]
        out += [
            f"{r['servers']:8.1f}  {r.get('worker', 'main')}, after {r['test']}" for r in servers
        ]
    walls = Counter({r["test"]: r.get("wall", 0.0) for r in rows})
    out += ["", "Longest in wall time (a test that waits holds its worker):"]
    out += [f"{wall:8.1f}  {test}" for test, wall in walls.most_common(top // 2)]
    out += ["", *_timeline(rows)]
    out += ["", "CPU-s per folder:"]
    out += [f"{cpu:8.1f}  {folder}" for folder, cpu in folders.most_common()]
    return "\n".join(out)


def _timeline(rows: list[dict]) -> list[str]:
    """Each worker's busy time and when its last test ended: a long gap to the last worker's end
    is a worker idle while another finishes a long test (reorder the heavy tests first)."""
    timed = [r for r in rows if "end" in r]
    if not timed:
        return []
    first = min(r["end"] - r["wall"] for r in timed)
    last = max(r["end"] for r in timed)
    out = [f"Workers ({last - first:.0f} s from the first test's start to the last test's end):"]
    for worker in sorted({r["worker"] for r in timed}):
        mine = [r for r in timed if r["worker"] == worker]
        ended = max(r["end"] for r in mine)
        busy = sum(r["wall"] for r in mine)
        tail = sorted(mine, key=lambda r: r["end"])[-3:]
        out.append(
            f"  {worker}: {len(mine)} tests, busy {busy:.0f} s, "
            f"idle at the end {last - ended:.0f} s; "
            f"last: {', '.join(r['test'].split('::')[-1][:40] for r in tail)}"
        )
    return out


if __name__ == "__main__":
    print(summary(Path(sys.argv[1])))
