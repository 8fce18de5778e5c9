"""The command's job controls: ``--label k=v`` (repeatable), ``--kms-key``, ``--service-account``,
and the BigQuery sink ``--dest bq://PROJECT.DATASET[.TABLE]``.

``control_options`` goes under ``cli_plan.pay_options`` on ``submit`` and ``run submit``: it
checks the controls against Vertex's rules before anything else (a bad one exits with the
configuration exit code, 2, and one line naming the flag and the rule) and puts them in the
command's ``PayOnce``, whose ``SubmitOptions`` every submission, run and plan takes.
"""

from __future__ import annotations

import functools
import os
from dataclasses import replace
from typing import Any

import click

from .._bigquery.dest import check_dest
from .._bigquery.read import check_extra
from .._config import read_config
from .._errors import InvalidRequestError
from .._vertex.controls import check_controls
from .cli_options import config_flags
from .cli_plan import PayOnce
from .cli_render import ExitCode, Fail

__all__ = ["control_options"]

_FLAGS = {
    "labels": "--label",
    "kms_key": "--kms-key",
    "service_account": "--service-account",
    "dest": "--dest",
}


def _labels(given: tuple[str, ...]) -> dict[str, str] | None:
    labels: dict[str, str] = {}
    for item in given:
        key, equals, value = item.partition("=")
        if not equals:
            raise Fail(ExitCode.USAGE, f"--label takes KEY=VALUE, got {item!r}")
        if key in labels:
            raise Fail(ExitCode.USAGE, f"--label {key!r} is given twice")
        labels[key] = value
    return labels or None


def _location() -> str | None:
    """The location the command's client will have, if it is configured (else its own error)."""
    try:
        return read_config(os.environ, config_flags()).location
    except InvalidRequestError:
        return None


def control_options(command: Any) -> Any:
    """The four options, checked and put into the ``pay: PayOnce`` handed to ``command``."""

    @functools.wraps(command)
    def with_controls(
        *args: Any,
        pay: PayOnce,
        label: tuple[str, ...],
        kms_key: str | None,
        service_account: str | None,
        dest: str | None,
        **kwargs: Any,
    ) -> Any:
        labels = _labels(label)
        try:
            check_controls(labels, kms_key, service_account, location=_location())
            sink = check_dest(dest)
            if sink:
                check_extra()
        except InvalidRequestError as exc:
            raise Fail(ExitCode.USAGE, f"{_FLAGS.get(exc.field, exc.field)}: {exc}") from exc
        options = replace(
            pay.options,
            labels=labels,
            kms_key=kms_key,
            service_account=service_account,
            dest=sink,
        )
        return command(*args, pay=replace(pay, options=options), **kwargs)

    for option in (
        click.option(
            "--dest",
            metavar="bq://PROJECT.DATASET[.TABLE]",
            default=None,
            help="Write the output to this BigQuery dataset (a table per job) or table, not GCS; "
            "part of the id's identity (docs/bigquery.md).",
        ),
        click.option(
            "--service-account",
            metavar="EMAIL",
            default=None,
            help="Run the job as this service account (you need iam.serviceAccounts.actAs).",
        ),
        click.option(
            "--kms-key",
            metavar="NAME",
            default=None,
            help="Cloud KMS key (projects/P/locations/L/keyRings/R/cryptoKeys/K) for the job "
            "and everything staged for it.",
        ),
        click.option(
            "--label",
            metavar="KEY=VALUE",
            multiple=True,
            help="A label on the job (repeatable); part of the id's identity.",
        ),
    ):
        with_controls = option(with_controls)
    return with_controls
