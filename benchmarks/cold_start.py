"""Cold start: what `import vertexbatch` and `vertexbatch --help` cost against their floor.

The floor is the import of ``google.cloud.aiplatform_v1.services.job_service``, which any client
that controls jobs through ``aiplatform_v1`` pays. Each command runs in a fresh interpreter (the
one running this); one round runs every command back to back, in an order that rotates between
rounds, and a first round is thrown away (it warms the page cache and writes bytecode). Wall
seconds, CPU seconds and peak RSS come from the kernel's accounting of that one child
(``os.wait4``); each ratio is taken within a round, then the median over rounds.

``python -m benchmarks.cold_start REPEATS`` measures and prints ``RESULT <json>``; ``run.py``
runs it so, in a small process of its own: a child's peak RSS counts the memory of the process
that spawned it (it shares that memory until it executes the interpreter), and the benchmark's
parent holds the local stack's memory.

``--smoke`` after it (``run.py --smoke``, the tests' run) throws no round away and runs each
command in a fork of this process, which imported the commands' libraries once (``PRELOAD``),
instead of a fresh interpreter: every row and cell from the same code, every command's code run,
the libraries imported once instead of once a command, so no figure means anything.
"""

from __future__ import annotations

import importlib
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = [
    "COMMANDS", "HEADERS", "Command", "Figures", "measure", "measure_apart", "render", "rows",
    "verdicts",
]  # fmt: skip

ROOT = Path(__file__).resolve().parents[1]
MB = 1024 * 1024


@dataclass(frozen=True)
class Command:
    """One command measured: its name in the table, what it runs, and its target ratio."""

    name: str
    args: tuple[str, ...]  # after the interpreter
    target: float | None  # at most this many times the floor's wall time; None: no target


_CHECK = (
    "import vertexbatch; from vertexbatch._requests.field_check import check_claude_fields; "
    "check_claude_fields(vertexbatch.ClaudeRequest('k', {params}))"
)
FLOOR = Command(
    '`python -c "import google.cloud.aiplatform_v1.services.job_service"`',
    ("-c", "import google.cloud.aiplatform_v1.services.job_service"),
    None,
)
COMMANDS = (
    FLOOR,
    Command('`python -c "import vertexbatch"`', ("-c", "import vertexbatch"), 1.3),
    # What the installed `vertexbatch` script runs, with its argument.
    Command(
        "`vertexbatch --help`",
        ("-c", "import sys; from vertexbatch._command.cli import main; sys.exit(main())", "--help"),
        1.5,
    ),
    # For reference, no target: what a command that talks to the cloud pays before its first
    # call (the client imports aiplatform and google-cloud-storage; it makes no request).
    Command(
        "`import vertexbatch` + `Client.for_endpoints(...)`",
        (
            "-c",
            "import vertexbatch; vertexbatch.Client.for_endpoints(project='p', "
            "location='us-central1', bucket='b', vertex_endpoint='http://127.0.0.1:9', "
            "storage_endpoint='http://127.0.0.1:9')",
        ),
        None,
    ),
    # The field check of a first Claude request: one of the Messages API's first fields only
    # is known without the SDK; one with a tool compiles anthropic's request types.
    Command(
        "`import vertexbatch` + field check, text request",
        (
            "-c",
            _CHECK.format(
                params="{'max_tokens': 8, 'messages': [{'role': 'user', 'content': 'Hi'}]}"
            ),
        ),
        None,
    ),
    Command(
        "`import vertexbatch` + field check, request with a tool",
        (
            "-c",
            _CHECK.format(
                params="{'max_tokens': 8, 'messages': [{'role': 'user', 'content': 'Hi'}], "
                "'tools': [{'name': 'f', 'input_schema': {'type': 'object'}}]}"
            ),
        ),
        None,
    ),
)
# --smoke: what the commands import, imported once by the process that forks each of them.
PRELOAD = (
    "google.cloud.aiplatform_v1.services.job_service",
    "google.cloud.storage",
    "vertexbatch",
    "vertexbatch._command.cli",
    "vertexbatch._requests.field_check",
    "anthropic.types",
)
HEADERS = [
    "command", "wall s", "CPU s", "peak RSS MB", "wall / floor", "CPU / floor", "RSS / floor",
    "target", "verdict",
]  # fmt: skip


@dataclass
class Figures:
    """Every round's figures of one command."""

    command: Command
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    rss: list[int] = field(default_factory=list)


def _fork_command(args: Sequence[str], err: int) -> int:
    """``--smoke``: run ``python -c CODE ARGS...`` in a fork of this process, as the interpreter
    would run it (stdin and stdout on the null device, stderr to ``err``, the exit status of its
    ``SystemExit``); the fork's process id."""
    if args[0] != "-c":
        raise ValueError(f"a smoke run forks `python -c` commands only, not {shlex.join(args)}")
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    status = 1  # the fork: it never returns
    try:
        for fd, mode in ((0, os.O_RDONLY), (1, os.O_WRONLY)):
            os.dup2(os.open(os.devnull, mode), fd)
        os.dup2(err, 2)
        sys.argv = ["-c", *args[2:]]
        try:
            exec(compile(args[1], "<string>", "exec"), {"__name__": "__main__"})
            status = 0
        except SystemExit as exit_:
            code = exit_.code
            status = code if isinstance(code, int) else 0 if code is None else 1
            if not isinstance(code, int | None):
                print(code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stderr.flush()
        os._exit(status)


def _run_once(
    args: Sequence[str], env: dict[str, str], *, forked: bool = False
) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system) and peak RSS bytes of one child process: a
    fresh interpreter, or (``forked``, ``--smoke``) a fork of this process."""
    with tempfile.TemporaryFile() as err:
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_DUP2, err.fileno(), 2),
        ]
        began = time.perf_counter()
        if forked:
            pid = _fork_command(args, err.fileno())
        else:
            pid = os.posix_spawn(sys.executable, [sys.executable, *args], env, file_actions=actions)
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - began
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise RuntimeError(
                f"{shlex.join(['python', *args])} failed:\n{err.read().decode()[-3000:]}"
            )
    # ru_maxrss is in KiB on Linux.
    return wall, usage.ru_utime + usage.ru_stime, int(usage.ru_maxrss) * 1024


def measure(
    repeats: int, commands: Sequence[Command] = COMMANDS, *, smoke: bool = False
) -> list[Figures]:
    """``repeats`` rounds of every command, from the repository root: after one thrown away,
    each in a fresh interpreter; or (``smoke``) none thrown away, each in a fork of this
    process, which imports ``PRELOAD`` first."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    if smoke:
        for module in PRELOAD:
            importlib.import_module(module)
    figures = [Figures(c) for c in commands]
    first = 1 if smoke else 0
    for round_ in range(first, repeats + 1):
        shift = round_ % len(figures)
        for fig in figures[shift:] + figures[:shift]:
            wall, cpu, rss = _run_once(fig.command.args, env, forked=smoke)
            if round_ > 0:
                fig.wall.append(wall)
                fig.cpu.append(cpu)
                fig.rss.append(rss)
    return figures


def measure_apart(repeats: int, *, smoke: bool = False) -> list[Figures]:
    """``measure`` in a fresh process of its own (see the module docstring for why)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.cold_start",
            str(repeats),
            *(("--smoke",) if smoke else ()),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600 + 60 * repeats,
    )
    found = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not found:
        raise RuntimeError(f"the cold start measurement failed:\n{proc.stderr[-4000:]}")
    by_name = {c.name: c for c in COMMANDS}
    return [
        Figures(by_name[f["command"]["name"]], f["wall"], f["cpu"], f["rss"])
        for f in json.loads(found[-1][len("RESULT ") :])
    ]


def _ratio(values: Sequence[float], floor: Sequence[float]) -> float:
    return statistics.median(v / f for v, f in zip(values, floor, strict=True))


def verdicts(figures: Sequence[Figures]) -> dict[str, tuple[float, bool]]:
    """Each targeted command's wall ratio to the floor, and whether it meets its target."""
    found = {}
    for fig in figures[1:]:
        if fig.command.target is not None:
            ratio = _ratio(fig.wall, figures[0].wall)
            found[fig.command.name] = (ratio, ratio <= fig.command.target)
    return found


def rows(figures: Sequence[Figures]) -> list[list[str]]:
    """The table's rows; the first command is the floor the others are divided by."""
    floor = figures[0]
    met = verdicts(figures)
    out = []
    for i, fig in enumerate(figures):
        target = fig.command.target
        out.append([
            fig.command.name,
            f"{statistics.median(fig.wall):.2f}",
            f"{statistics.median(fig.cpu):.2f}",
            f"{statistics.median(fig.rss) / MB:.0f}",
            f"{_ratio(fig.wall, floor.wall):.2f}",
            f"{_ratio(fig.cpu, floor.cpu):.2f}",
            f"{_ratio(fig.rss, floor.rss):.2f}",
            "floor" if i == 0 else "-" if target is None else f"<={target}x wall",
            "-" if target is None else ("MET" if met[fig.command.name][1] else "MISS"),
        ])  # fmt: skip
    return out


def render(figures: Sequence[Figures], table: Callable[[list[str], list[list[str]]], str]) -> str:
    """The section as Markdown; ``table`` draws a table from headers and rows."""
    repeats = len(figures[0].wall)
    return "\n".join(
        [
            f"Cold start: fresh interpreters, median of {repeats} rounds (ratios within a round)",
            "",
            table(HEADERS, rows(figures)),
        ]
    )


def main(argv: Sequence[str]) -> int:
    """Measure ``argv[0]`` rounds (``--smoke`` after it: none thrown away first, each command
    in a fork, ``measure``) and print ``RESULT <json>`` (every round's figures)."""
    figures = measure(int(argv[0]), smoke="--smoke" in argv[1:])
    print("RESULT " + json.dumps([asdict(f) for f in figures]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
