"""``vertexbatch probe``: the command over ``_checks.probe``, registered by ``cli``."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
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
    help="Confirm: probe submits small batch jobs (two of three requests; with --multi-region, "
    "two of one request per location, cancelled at once).",
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
    "--lane",
    "lanes",
    type=click.Choice(["embeddings", "chat"]),
    multiple=True,
    help="Probe this lane too (repeatable): one more job of three requests (embeddings: three "
    "short texts; chat: at most 64 output tokens each), checked against the output row "
    "vertexbatch's reader assumes.",
)
@click.option("--embeddings-model", default="gemini-embedding-001", show_default=True)
@click.option("--chat-model", default="meta/llama-3.3-70b-instruct-maas", show_default=True)
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
@click.option(
    "--multi-region",
    "multi_regions",
    type=click.Choice(["us", "eu"]),
    multiple=True,
    help="Instead: create one tiny job per provider in this multi-region (repeatable), cancel "
    "each at once, and report whether the create was accepted.",
)
@cloud_command
def probe(
    yes: bool,
    out: Path,
    claude_model: str,
    gemini_model: str,
    lanes: tuple[str, ...],
    embeddings_model: str,
    chat_model: str,
    interval: float | None,
    timeout: float,
    no_invalid_rows: bool,
    multi_regions: tuple[str, ...],
) -> None:
    """Run a tiny Claude and a tiny Gemini job (--lane: an embeddings or open-model job too)
    and report how the service shapes them.

    Writes --out: the job JSON's field names and state sequence with timings, the output
    files, each row's field names and JSON types (enums and status prefixes kept, no text),
    and the facts docs/local-stack.md maps to emulator options; then prints where the service
    differs from the local stack's defaults. LocalStack.from_probe_report(OUT) reproduces it.

    With --multi-region us (or eu): one tiny job per provider is created there instead, and
    cancelled as soon as it exists; --out says whether each create was accepted.
    """
    from .._checks.probe import run_probe
    from .._providers import by_command
    from .._rules import check_model

    models = {"claude": claude_model, "gemini": gemini_model}
    chosen = {"embeddings": embeddings_model, "chat": chat_model}
    models.update((lane, chosen[lane]) for lane in dict.fromkeys(lanes))
    if not yes:
        raise Fail(
            ExitCode.USAGE,
            f"probe submits {len(models)} small batch jobs that cost a few requests: run it "
            "again with --yes",
        )
    for name, model in models.items():
        check_model(model, by_command(name).provider)
    if out.parent and not out.parent.is_dir():
        raise Fail(ExitCode.USAGE, f"--out: directory {out.parent} does not exist")

    def progress(line: str) -> None:
        click.echo(f"vertexbatch: probe: {line}", err=True)

    def partial(report: dict[str, Any]) -> None:
        out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
        progress(f"stopped early: partial report (no rows, no facts) written to {out}")

    if multi_regions:
        _multi_regions(out, multi_regions, models, progress)
        return
    report = run_probe(
        os.environ,
        config_flags(),
        models=models,
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


def _multi_regions(
    out: Path,
    locations: tuple[str, ...],
    models: dict[str, str],
    progress: Callable[[str], None],
) -> None:
    """``--multi-region``: the create on each multi-region, reported per provider."""
    from .._checks.probe_regions import probe_regions

    report = probe_regions(
        os.environ,
        config_flags(),
        locations=locations,
        models=models,
        progress=progress,
    )
    out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    click.echo(f"report written to {out}")
    for location, lanes in report["locations"].items():
        for name, entry in lanes.items():
            if entry["accepted"]:
                said = f"accepted ({entry['job']}; cancel {entry['cancel']})"
            else:
                why = " ".join(str(v) for v in (entry["code"], entry["status"]) if v)
                said = f"refused ({why}): {entry['message']}"
            click.echo(f"  {location} {name}: batch create {said}")
