"""Generate the command's sample outputs that the docs show, from a real run on the local stack.

    python -m tools.docs_samples           # rewrite docs/samples/*.txt
    python -m tools.docs_samples --check   # regenerate into a temporary folder; exit 1 on a diff

Starts `vertexbatch emulator --env-file local.env` in an empty folder, as the quickstart does,
runs each command of the samples there with the environment that file holds (in this process,
through click's runner: a process each cost 7x the time), and writes what
it printed (stdout and stderr, in order) under the command line: docs/quickstart.md, cli.md and
cost.md include the files (`--8<-- "docs/samples/NAME.txt"`), so a sample cannot go stale:
tests/docs/test_docs_samples.py fails when a regenerated sample differs from the one in the docs.

What differs between runs is normalised: a job's number (the first job seen is always
2751784852711494009, the next ...010, ...), the stack's ports (Vertex 9100, GCS 9101), the
folder (/home/me/clone), a progress line's seconds, and `watch`'s progress lines but its last
(how many a job shows depends on when polls fall).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "docs" / "samples"
_CONFIG = ("GOOGLE_CLOUD_", "VERTEXBATCH_", "STORAGE_EMULATOR_HOST", "GOOGLE_APPLICATION_")
FOLDER = "/home/me/clone"
FIRST_JOB = 2751784852711494009

CLAUDE = "claude-sonnet-4-5"
HAIKU_PRICE = "claude-haiku-5-5=0.1,0.5,cache_write=0.125,above=100000:0.5,2.5,cache_write=0.625"
QUICKSTART_REQUESTS = (
    '{"key": "a", "params": {"max_tokens": 64, "messages": [{"role": "user", "content": '
    '"Review this diff."}]}}\n'
    '{"key": "b", "params": {"max_tokens": 64, "messages": [{"role": "user", "content": '
    '"x [[vb:error 429]]"}]}}\n'
)


def _claude(key: str, text: str) -> str:
    return (
        f'{{"key": "{key}", "params": {{"max_tokens": 64, "messages": '
        f'[{{"role": "user", "content": "{text}"}}]}}}}\n'
    )


# A bad third line, each refused before any cloud call (cli.md's "A bad line is exit 3").
BAD_LINES = (
    '{"key": "x", "params": }\n',
    '{"key": "x", "params": {"max_tokens": NaN, "messages": []}}\n',
    '{"key": "x", "params": {"messages": [{"role": "user", "content": "hi"}]}}\n',
    _claude("a", "again"),
    '{"key": "x", "params": {"model": "claude-sonnet-4-5", "max_tokens": 8, "messages": '
    '[{"role": "user", "content": "hi"}]}}\n',
)


class Session:
    """A folder with the local stack running, and the commands run in it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.jobs: dict[str, str] = {}
        self.ports: dict[str, str] = {}
        self.environment: dict[str, str] = {}
        self.emulator: subprocess.Popen[str] | None = None
        self.emulator_line = ""

    def start(self) -> None:
        self.emulator = subprocess.Popen(
            [sys.executable, "-m", "vertexbatch", "emulator", "--env-file", "local.env"],
            cwd=self.folder,
            env=self._base(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.emulator.stderr is not None
        self.emulator_line = self.emulator.stderr.readline().rstrip("\n")
        env_file = self.folder / "local.env"
        if not env_file.is_file():
            raise SystemExit(f"the emulator did not start: {self.emulator_line}")
        for line in env_file.read_text().splitlines():
            if line.startswith("export "):
                name, _, value = line[len("export ") :].partition("=")
                self.environment[name] = value
        vertex = self.environment["VERTEXBATCH_VERTEX_ENDPOINT"].rsplit(":", 1)[1]
        gcs = self.environment["STORAGE_EMULATOR_HOST"].rsplit(":", 1)[1]
        self.ports = {vertex: "9100", gcs: "9101"}

    def stop(self) -> None:
        if self.emulator is not None and self.emulator.poll() is None:
            self.emulator.send_signal(signal.SIGTERM)
            self.emulator.wait(timeout=60)

    def _base(self) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith(_CONFIG)}
        return {**base, "NO_COLOR": "1"}

    def write(self, name: str, text: str) -> None:
        (self.folder / name).write_text(text)

    def run(self, *args: str, unset: str = "", stderr_only: bool = False) -> tuple[str, int]:
        """`vertexbatch ARGS` in the folder: what it printed, normalised, and its exit code.

        ``unset`` leaves that variable out; ``stderr_only`` drops stdout, as `>/dev/null` does.
        The command runs in this process (click's runner, the environment and folder it would
        have), not one process each: a cold start per command cost most of the time. What it
        prints is the same, and ``--check`` fails on any difference from the pages' samples.
        """
        from click.testing import CliRunner

        from vertexbatch._command.cli import main

        env = {k: v for k, v in {**self._base(), **self.environment}.items() if k != unset}
        given: dict[str, str | None] = {k: None for k in os.environ if k not in env}
        given.update(env)
        with contextlib.chdir(self.folder):
            done = CliRunner().invoke(main, list(args), env=given, prog_name="vertexbatch")
        out = done.stderr if stderr_only else done.output
        return self.normalise(out), done.exit_code

    def shown(self, *args: str) -> str:
        """The command line as a reader types it, then what it printed."""
        out, _ = self.run(*args)
        return f"$ vertexbatch {' '.join(args)}\n{out}"

    def normalise(self, text: str) -> str:
        def job(match: re.Match[str]) -> str:
            number = self.jobs.setdefault(match.group(1), str(FIRST_JOB + len(self.jobs)))
            return f"batchPredictionJobs/{number}"

        text = re.sub(r"batchPredictionJobs/(\d+)", job, text)
        for port, shown in self.ports.items():
            text = re.sub(rf"(127\.0\.0\.1|localhost):{port}\b", rf"\g<1>:{shown}", text)
        text = text.replace(str(self.folder), FOLDER)
        return re.sub(r"\((\d+(?:\.\d+)?)s\)", "(0s)", text)


def _last_progress(text: str) -> str:
    """watch's output with only its last progress line (`ID STATE n/m rows (0s)`)."""
    lines = text.splitlines(keepends=True)
    progress = [i for i, line in enumerate(lines) if re.match(r"\S+ JOB_STATE_\w+ \d+/\d+ ", line)]
    return "".join(line for i, line in enumerate(lines) if i not in progress[:-1])


def _run_until_done(session: Session, run_id: str, limit: float = 180.0) -> None:
    """`run advance` until the run is done (exit 0), each step a second apart at most."""
    ends = time.monotonic() + limit
    while time.monotonic() < ends:
        _, code = session.run("run", "advance", run_id)
        if code == 0:
            return
        time.sleep(1.0)
    raise SystemExit(f"run {run_id} was not done in {limit:.0f} s")


def generate(session: Session) -> dict[str, str]:
    """Every sample, by file name, from one session on one local stack."""
    samples: dict[str, str] = {}
    samples["quickstart-emulator.txt"] = (
        "$ . .venv/bin/activate\n$ vertexbatch emulator --env-file local.env\n"
        + session.normalise(session.emulator_line)
        + "\n"
    )

    session.write("requests.jsonl", QUICKSTART_REQUESTS)
    submit = ("submit", "--provider", "claude", "--model", CLAUDE, "--id", "t1", "requests.jsonl")
    samples["quickstart-shell.txt"] = (
        "$ . .venv/bin/activate && . ./local.env\n"
        "$ cat > requests.jsonl <<'END'\n"
        + QUICKSTART_REQUESTS
        + "END\n"
        + session.shown(*submit)
        + _last_progress(session.shown("watch", "t1", "--floor", "1"))
        + session.shown("results", "t1", "--only", "retryable")
    )
    again = session.shown(*submit)
    if again != session.shown(*submit) or "t1" not in again:
        raise SystemExit("submit of the same id and file printed another job")
    samples["cli-missing-setting.txt"] = session.run("status", "t1", unset="GOOGLE_CLOUD_PROJECT")[
        0
    ]
    status, code = session.run("status", "t1")
    samples["cli-status.txt"] = f"$ vertexbatch status t1\n{status}$ echo $?\n{code}\n"
    samples["cli-cancel.txt"] = session.shown("cancel", "t1")

    bad = []
    for line in BAD_LINES:
        session.write("requests.jsonl", _claude("a", "one") + _claude("b", "two") + line)
        out, _ = session.run(
            "submit", "--provider", "claude", "--model", CLAUDE, "--id", "bad", "requests.jsonl"
        )
        bad.append(out)
    samples["cli-bad-lines.txt"] = "".join(bad)
    session.write("requests.jsonl", QUICKSTART_REQUESTS)
    wrong_family, _ = session.run(
        "submit",
        "--provider",
        "claude",
        "--model",
        "gemini-2.5-flash",
        "--id",
        "g1",
        "requests.jsonl",
    )
    (session.folder / "requests.jsonl").unlink()
    missing, _ = session.run(
        "submit", "--provider", "claude", "--model", CLAUDE, "--id", "t2", "requests.jsonl"
    )
    samples["cli-bad-model.txt"] = wrong_family + missing

    # One key of each outcome: results' summary on stderr.
    directives = (
        "",
        " [[vb:refuse]]",
        " [[vb:truncate]]",
        " [[vb:error 429]]",
        " [[vb:error 400]]",
        " [[vb:drop]]",
    )
    session.write(
        "requests.jsonl", "".join(_claude(f"o{i}", f"task{d}") for i, d in enumerate(directives))
    )
    session.run("submit", "--provider", "claude", "--model", CLAUDE, "--id", "t6", "requests.jsonl")
    session.run("watch", "t6", "--floor", "1")
    samples["cli-results-summary.txt"] = session.run("results", "t6", stderr_only=True)[0]

    keys = [_claude(f"k{i}", f"task {i}") for i in range(5)]
    keys += [_claude("k5", "x [[vb:error 429]]"), _claude("k6", "y [[vb:drop]]")]
    session.write("requests.jsonl", "".join(keys))
    run = ("run", "submit", "--provider", "claude", "--model", CLAUDE, "--id", "nightly-1")
    session.run(*run, "--shard-size", "4", "--attempts", "3", "requests.jsonl")
    samples["cli-run-rejoin.txt"] = "".join(
        session.run(*args)[0]
        for args in (
            (*run, "--shard-size", "5", "--attempts", "3", "requests.jsonl"),
            (*run, "--shard-size", "4", "--attempts", "5", "requests.jsonl"),
        )
    )
    session.write("other.jsonl", "".join(keys[:6]))
    samples["cli-run-rejoin.txt"] += session.run(
        *run, "--shard-size", "4", "--attempts", "3", "other.jsonl"
    )[0]
    _run_until_done(session, "nightly-1")
    samples["cli-run-exhausted.txt"] = session.shown(
        "run", "results", "nightly-1", "--only", "exhausted"
    )
    samples["cli-no-run.txt"] = session.run("run", "results", "nightly-2")[0]

    # Three requests, two of them the same: --dedupe sends two lines.
    same = _claude("a", "Review this diff.") + _claude("b", "Review this diff.")
    session.write("requests.jsonl", same + _claude("c", "Summarise the ticket."))
    samples["cost-dry-run.txt"] = session.shown(
        "submit",
        "--provider",
        "claude",
        "--model",
        CLAUDE,
        "--id",
        "nightly-2",
        "--dedupe",
        "--dry-run",
        "requests.jsonl",
    )
    # The catalogue's Claude Haiku 5.5 row as one --price word: two bands by prompt size.
    samples["cost-price-band.txt"] = session.shown(
        "plan",
        "--provider",
        "claude",
        "--model",
        "claude-haiku-5-5",
        "--id",
        "nightly-3",
        "--price",
        HAIKU_PRICE,
        "requests.jsonl",
    )
    samples["cli-doctor-local.txt"] = session.shown("doctor")

    session.stop()
    samples["cli-unreachable.txt"] = session.run("status", "t1")[0]
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.docs_samples", description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        session = Session(Path(tmp))
        session.start()
        try:
            samples = generate(session)
        finally:
            session.stop()
    if not args.check:
        SAMPLES.mkdir(exist_ok=True)
        for old in SAMPLES.glob("*.txt"):
            if old.name not in samples:
                old.unlink()
        for name, text in samples.items():
            (SAMPLES / name).write_text(text)
        print(f"wrote {len(samples)} samples to {SAMPLES.relative_to(ROOT)}/")
        return 0
    stale = 0
    for name, text in sorted(samples.items()):
        path = SAMPLES / name
        kept = path.read_text() if path.is_file() else ""
        if kept != text:
            stale += 1
            sys.stdout.writelines(
                difflib.unified_diff(
                    kept.splitlines(keepends=True),
                    text.splitlines(keepends=True),
                    f"docs/samples/{name} (in the docs)",
                    f"docs/samples/{name} (this run)",
                )
            )
    extra = sorted(p.name for p in SAMPLES.glob("*.txt") if p.name not in samples)
    for name in extra:
        print(f"docs/samples/{name}: no longer generated")
    if stale or extra:
        print(f"{stale + len(extra)} samples differ: run python -m tools.docs_samples")
        return 1
    print(f"{len(samples)} samples as in the docs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
