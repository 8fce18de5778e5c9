"""``vertexbatch doctor``: the command over ``_checks.doctor``'s checks, registered by ``cli``."""

from __future__ import annotations

import json
import os

import click

from .cli_options import cloud_command, config_flags
from .cli_render import ExitCode, Fail

__all__ = ["doctor"]


@click.command()
@click.option(
    "--model",
    "models",
    multiple=True,
    help="A bare Vertex model id to look up (repeatable; default: claude-sonnet-4-5 "
    "and gemini-2.5-flash).",
)
@click.option(
    "--kms-key",
    metavar="NAME",
    default=None,
    help="Check this Cloud KMS key too: it exists and the Vertex AI service agent may use it.",
)
@click.option(
    "--service-account",
    metavar="EMAIL",
    default=None,
    help="Check this service account too: it exists and you may act as it.",
)
@click.option(
    "--dest",
    metavar="bq://PROJECT.DATASET",
    default=None,
    help="Check this BigQuery dataset too: it exists, its region, who may read and write it.",
)
@click.option(
    "--source",
    metavar="bq://PROJECT.DATASET.TABLE",
    default=None,
    help="Check this BigQuery table too: it exists, its region, who may read it.",
)
@click.option("--json", "as_json", is_flag=True, help="Print a list of {check, result, detail}.")
@cloud_command
def doctor(
    models: tuple[str, ...],
    kms_key: str | None,
    service_account: str | None,
    dest: str | None,
    source: str | None,
    as_json: bool,
) -> None:
    """Check the configuration, credentials, Vertex, the bucket and the models before a first job.

    One line per check: ok, warn, fail or skip, its name, and for warn and fail the fix; warn
    also when doctor cannot tell.
    Exit 0 when no check failed, 13 when one did.
    """
    from .._checks.doctor import failed
    from .._checks.doctor_run import run_checks

    for flag, uri in (("--dest", dest), ("--source", source)):  # a bad URI: usage, first
        if uri is not None:
            _check_uri(flag, uri)

    checks = run_checks(
        os.environ,
        config_flags(),
        models=models,
        kms_key=kms_key,
        service_account=service_account,
        dest=dest,
        source=source,
    )
    if as_json:
        click.echo(json.dumps([check.to_dict() for check in checks]))
    else:
        for check in checks:
            click.echo(check.line())
    if failed(checks):
        click.get_current_context().exit(int(ExitCode.CHECK_FAILED))


def _check_uri(flag: str, uri: str) -> None:
    """A bad BigQuery URI (or a --source that names no table) is a usage error naming ``flag``."""
    from .._bigquery.dest import parse_dest
    from .._errors import InvalidRequestError

    try:
        parsed = parse_dest(uri, flag.lstrip("-"))
    except InvalidRequestError as exc:
        raise Fail(ExitCode.USAGE, f"{flag}: {exc}") from exc
    if flag == "--source" and not parsed.table:
        raise Fail(ExitCode.USAGE, f"--source: {uri!r} names a dataset: give a table")
