"""``vertexbatch probe``: the command over ``_checks.probe``, registered by ``cli``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from .cli_options import Seconds, cloud_command, config_flags
from .cli_render import ExitCode, Fail

__all__ = ["probe"]


@click.command()
@click.option(
    "--yes",
    is_flag=True,
    help="Confirm: probe submits two small batch jobs (six requests, billed at batch rates).",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="Where the report goes (JSON; no request or response text).",
)
@click.option("--claude-model", default="claude-sonnet-4-5", show_default=True)
@click.option("--gemini-model", default="gemini-2.5-flash", show_default=True)
@click.option(
    "--interval", type=Seconds(), default=None,
    help="Seconds between polls, at least 5 against Vertex [default: 30; 0.5 on the local "
    "stack].",
)  # fmt: skip
@click.option(
    "--timeout", type=Seconds(), default=6 * 3600.0, show_default=True,
    help="Seconds to wait before cancelling a job still live.",
)  # fmt: skip
@click.option(
    "--no-invalid-rows",
    is_flag=True,
    help="Leave out the row that provokes a per-line error (if it fails a whole job).",
)
@cloud_command
def probe(
    yes: bool,
    out: Path,
    claude_model: str,
    gemini_model: str,
    interval: float | None,
    timeout: float,
    no_invalid_rows: bool,
) -> None:
    """Run a tiny Claude and a tiny Gemini job and report how the service shapes them.

    Writes --out: the job JSON's field names and state sequence with timings, the output
    files, each row's field names and JSON types (enums and status prefixes kept, no text),
    and the facts docs/local-stack.md maps to emulator options; then prints where the service
    differs from the local stack's defaults. LocalStack.from_probe_report(OUT) reproduces it.
    """
    from .._checks.probe import run_probe
    from .._rules import check_model

    if not yes:
        raise Fail(
            ExitCode.USAGE,
            "probe submits two small batch jobs that cost a few requests: run it again with --yes",
        )
    check_model(claude_model, "anthropic")
    check_model(gemini_model, "google")
    if out.parent and not out.parent.is_dir():
        raise Fail(ExitCode.USAGE, f"--out: directory {out.parent} does not exist")

    def progress(line: str) -> None:
        click.echo(f"vertexbatch: probe: {line}", err=True)

    def partial(report: dict[str, Any]) -> None:
        out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
        progress(f"stopped early: partial report (no rows, no facts) written to {out}")

    report = run_probe(
        os.environ,
        config_flags(),
        models={"claude": claude_model, "gemini": gemini_model},
        interval=interval,
        timeout=timeout,
        progress=progress,
        invalid_rows=not no_invalid_rows,
        on_partial=partial,
    )
    out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    click.echo(f"report written to {out}")
    found = report["differences"]
    if not found:
        click.echo("the service showed the local stack's defaults in every fact the probe saw")
        return
    click.echo("the service differs from the local stack's defaults in:")
    for line in found:
        click.echo(f"  {line}")
