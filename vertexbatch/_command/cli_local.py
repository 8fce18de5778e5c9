"""``vertexbatch emulator`` and ``vertexbatch demo``: the commands that need the local stack."""

from __future__ import annotations

import errno
import shlex
import shutil
import sys
from pathlib import Path

import click

from .._config import BUCKET
from .cli_options import Seconds, verbose
from .cli_render import ExitCode, Fail

__all__ = ["demo", "emulator"]


_port = click.IntRange(0, 65535)


@click.command()
@click.option(
    "--bucket",
    envvar=BUCKET.variable,
    default="vertexbatch-local",
    show_default=True,
    # Written as the other commands write it (click's show_envvar says "env var").
    help=f"Bucket to create on the local GCS server. [env: {BUCKET.variable}]",
)
@click.option(
    "--row-seconds", type=Seconds(), default=0.05, show_default=True, help="Time each row takes."
)
@click.option(
    "--port", type=_port, default=0, help="Port of the Vertex service [default: a free one]."
)
@click.option(
    "--gcs-port", type=_port, default=0, help="Port of the GCS server [default: a free one]."
)
@click.option(
    "--env-file",
    type=click.Path(dir_okay=False),
    help="Write the export lines to this file once the stack serves (removed when it stops).",
)
@click.option(
    "--probe-report",
    type=click.Path(dir_okay=False, exists=True),
    help="Behave as this `vertexbatch probe` report says the real service did.",
)
@click.option(
    "--bigquery",
    is_flag=True,
    help="Also run BigQuery (bqemulator; needs the bigquery-local extra: "
    "pip install '.[bigquery-local]' in a checkout); exports BIGQUERY_EMULATOR_HOST, "
    "which google-cloud-bigquery reads.",
)
@click.option(
    "--location",
    "locations",
    multiple=True,
    metavar="NAME",
    help="Also serve this location (repeatable). By default the stack serves the regions "
    "google-cloud-aiplatform knows, global, us and eu; a call under any other is a 400.",
)
@click.option(
    "--model",
    "models",
    multiple=True,
    metavar="PUBLISHER/MODEL",
    help="Also serve this model (repeatable), e.g. google/gemini-3.5-flash. By default the "
    "stack serves the models vertexbatch's catalogue lists (where it lists them) and the ids "
    "the tests use; a call naming any other is Vertex's 404.",
)
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False),
    default=None,
    metavar="DIR",
    help="Keep jobs and GCS objects in DIR, so a restart on the same ports finds them. "
    "Default: none, everything is in memory and gone when the stack stops. A job still "
    "running at stop ends JOB_STATE_FAILED (code 14) on the next start.",
)
@verbose
def emulator(
    bucket: str,
    row_seconds: float,
    port: int,
    gcs_port: int,
    env_file: str | None,
    probe_report: str | None,
    bigquery: bool,
    locations: tuple[str, ...],
    models: tuple[str, ...],
    state_dir: str | None,
) -> None:
    """Run the local stack (GCS + Vertex) until Ctrl-C or SIGTERM; print its environment.

    The export lines go to stdout, and with --env-file to a file. From a shell, give fixed
    ports and an env file, then source it where you run commands; a restart on the same ports
    keeps those exports right:

    \b
      vertexbatch emulator --port 9100 --gcs-port 9101 --env-file .vertexbatch.env
      source .vertexbatch.env          # in another shell, or after the file appears

    It keeps running, so `eval "$(vertexbatch emulator)"` would never return: use the file.
    Without --state-dir a restart forgets every job and object; with it, both persist.
    """
    if port and port == gcs_port:
        raise Fail(ExitCode.USAGE, f"--port and --gcs-port must differ (both {port})")
    try:
        from ..emulator import Timing, run_foreground
    except ImportError as exc:
        raise Fail(ExitCode.USAGE, _LOCAL_EXTRA.format(exc=exc)) from exc
    try:
        run_foreground(
            bucket=bucket,
            timing=Timing(row_seconds=row_seconds),
            port=port,
            gcs_port=gcs_port,
            env_file=env_file,
            probe_report=probe_report,
            bigquery=bigquery,
            locations=locations,
            state_dir=state_dir,
            models=models,
        )
    except ValueError as exc:  # not a probe report, a location or model name, a state file
        text = str(exc)
        flag = "--location" if text.startswith("location ") else "--probe-report"
        flag = "--model" if text.startswith("model ") else flag
        flag = "--state-dir" if "state file" in text else flag
        raise Fail(ExitCode.USAGE, f"{flag}: {exc}") from None
    except RuntimeError as exc:  # --bigquery without the extra, or bqemulator did not start
        raise Fail(ExitCode.USAGE, f"--bigquery: {exc}") from None
    except FileExistsError as exc:  # EnvFileInUse: another emulator's file, still serving
        raise Fail(ExitCode.USAGE, f"--env-file: {exc}") from None
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        raise Fail(
            ExitCode.USAGE,
            f"cannot start the local stack: {exc.strerror} (another vertexbatch emulator?): "
            "stop it, or choose another --port / --gcs-port",
        ) from None


_LOCAL_EXTRA = (
    "the local stack needs the 'local' extra ({exc}), from a checkout of vertexbatch: "
    "pip install '.[cli,local]' (or 'WHEEL[cli,local]' for a wheel built from it)"
)


@click.command()
@click.option("--fast", is_flag=True, help="No simulated latency (for tests).")
@click.option("--bigquery", is_flag=True, help="Add a section: a BigQuery table in, a dataset out.")
@verbose
def demo(fast: bool, bigquery: bool) -> None:
    """Run a Claude and a Gemini batch on a local stack and show what happened to each request."""
    try:
        from .demo import run_demo
        from .demo_bigquery import EXTRA_LINE, missing_extra
    except ImportError as exc:
        raise Fail(ExitCode.USAGE, _LOCAL_EXTRA.format(exc=exc)) from exc
    if bigquery and missing_extra():
        raise Fail(ExitCode.USAGE, f"{EXTRA_LINE} (missing: {', '.join(missing_extra())})")
    run_demo(
        out=sys.stdout, fast=fast, tty=sys.stdout.isatty(), command=invoked_as(), bigquery=bigquery
    )


def invoked_as() -> str:
    """How the user's shell runs this command again: ``vertexbatch`` when PATH finds the script
    that is running, else the path it was started by (``.venv/bin/vertexbatch`` after the
    README's install, which does not activate the venv)."""
    script = Path(sys.argv[0])
    if script.name != "vertexbatch":  # python -m vertexbatch
        return f"{shlex.quote(sys.executable)} -m vertexbatch"
    found = shutil.which("vertexbatch")
    if found and Path(found).resolve() == script.resolve():
        return "vertexbatch"
    return shlex.quote(sys.argv[0])
