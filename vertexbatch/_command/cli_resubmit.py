"""``vertexbatch resubmit ID``: some of a job's keys again, under a new id (``client.resubmit``).

By default the job's retryable and missing keys once it is terminal, under ``ID.r1`` (then
``ID.r2``, ... for a resubmission's own resubmission); ``--keys`` and ``--keys-from`` name the
keys instead, ``--new-id`` the id. The same command again adopts the job it made.
"""

from __future__ import annotations

import json
from typing import IO

import click

from .cli_options import cloud_client, cloud_command, find_job
from .cli_render import ExitCode, Fail, job_lines

__all__ = ["keys_given", "resubmit"]


def keys_given(listed: tuple[str, ...], stream: IO[str] | None) -> list[str] | None:
    """The keys ``--keys K1,K2`` (repeatable) and ``--keys-from FILE`` (one a line) name, in
    order, each once; ``None`` when neither is given (the job's retryable and missing keys).

    Raises:
        Fail: exit 2: an empty key in ``--keys`` (``a,,b``), or both options name none.
    """
    if not listed and stream is None:
        return None
    keys: list[str] = []
    for value in listed:
        parts = value.split(",")
        if not all(parts):
            raise Fail(
                ExitCode.USAGE,
                f"--keys {value!r} has an empty key: give keys as K1,K2 (a key holding a comma "
                "goes in a --keys-from file, one key a line)",
            )
        keys += parts
    if stream is not None:
        keys += [line.rstrip("\r\n") for line in stream if line.strip()]
    if not keys:
        raise Fail(ExitCode.USAGE, "--keys-from names no key (one key a line)")
    return list(dict.fromkeys(keys))


@click.command()
@click.argument("submission_id", metavar="ID")
@click.option(
    "--keys",
    "listed",
    multiple=True,
    metavar="K1,K2",
    help="Resubmit these keys (comma-separated; repeatable). Default: every retryable and "
    "missing key, once the job is terminal.",
)
@click.option(
    "--keys-from",
    type=click.File("r", encoding="utf-8"),
    default=None,
    metavar="FILE",
    help="Resubmit the keys of FILE, one a line (- for stdin), e.g. from "
    "'vertexbatch results ID --only retryable | jq -r .key'.",
)
@click.option(
    "--new-id",
    default=None,
    metavar="NEW_ID",
    help="The new job's submission id.  [default: ID.r1, or ID.rN+1 for ID.rN]",
)
@click.option("--json", "as_json", is_flag=True, help="Print the new job as JSON.")
@cloud_command
def resubmit(
    submission_id: str,
    listed: tuple[str, ...],
    keys_from: IO[str] | None,
    new_id: str | None,
    as_json: bool,
) -> None:
    """Submit some keys of the job of ID again, under a new id; print the new job.

    The requests are read back from what the job staged: no request file is needed. The same
    command again adopts the job it made. Exit 3 when the job is not terminal (without --keys),
    a key is not in the job, there is nothing to resubmit, or the new id is another's.
    """
    keys = keys_given(listed, keys_from)
    client = cloud_client()
    job = client.resubmit(find_job(client, submission_id), keys=keys, id=new_id)
    if as_json:
        click.echo(json.dumps(job.to_dict()))
        return
    for line in job_lines(job):
        click.echo(line)
