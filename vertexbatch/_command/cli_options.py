"""The options every ``vertexbatch`` command shares: the configuration flags and ``-v``.

The configuration flags are those of ``_config.SETTINGS``; their values wait in the click
context until a command asks for its client (``cloud_client``), built with the keywords
``_config.client_keywords`` reads from them and the environment, a flag winning over its variable.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

from .._client import Client
from .._config import (
    BUCKET,
    DEFAULT_PREFIX,
    LOCATION,
    PREFIX,
    PROJECT,
    SETTINGS,
    STORAGE_ENDPOINT,
    VERTEX_ENDPOINT,
    Setting,
    client_keywords,
)
from .._errors import InvalidRequestError
from .._rules import MAX_SECONDS, MIN_SECONDS
from .._values import Job
from .cli_render import ExitCode, Fail

# The longest duration any option takes, as every duration parameter of the library
# (``_rules.MAX_SECONDS``: about 31 years).
SECONDS_MAX = MAX_SECONDS


class Seconds(click.ParamType):  # type: ignore[type-arg]  # generic from click 8.2 on
    """A duration option: a finite number of seconds, from ``minimum`` to ``SECONDS_MAX``.

    ``inf``, ``nan`` and ``1e300`` are usage errors (exit 2) naming the option and the rule,
    like any other bad value, never an overflow deeper in (every numeric option of the command
    that is not a whole number is one of these). With ``above``, the minimum itself is refused
    and so is anything under ``MIN_SECONDS`` (a microsecond, the finest ``timedelta``: ``1e-300``
    would become a duration of 0), as the library's positive durations refuse it.
    """

    name = "seconds"

    def __init__(self, minimum: float = 0.0, *, above: bool = False) -> None:
        self.minimum = minimum
        self.above = above  # the minimum itself is refused

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, float):
            number = value
        else:
            try:
                number = float(value)
            except (TypeError, ValueError):
                self.fail(f"{value!r} is not a number of seconds", param, ctx)
        least = max(self.minimum, MIN_SECONDS) if self.above else self.minimum
        rule = f"a finite number of seconds at least {least:g} and at most 1e9"
        if self.above and self.minimum >= MIN_SECONDS:
            rule = f"a finite number of seconds more than {self.minimum:g} and at most 1e9"
        if (
            not math.isfinite(number)
            or number < least
            or (self.above and number == self.minimum)
            or number > SECONDS_MAX
        ):
            self.fail(f"{value!r} is not {rule}", param, ctx)
        return number


__all__ = [
    "ENVIRONMENT_HELP",
    "Seconds",
    "cloud_client",
    "cloud_command",
    "config_flags",
    "file_argument",
    "find_job",
    "verbose",
]

logger = logging.getLogger("vertexbatch")

F = TypeVar("F", bound=Callable[..., Any])

_CONFIG_KEY = "vertexbatch.config"


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    if param.name is not None:
        ctx.meta.setdefault(_CONFIG_KEY, {})[param.name] = value
    return value


def cloud_client() -> Client:
    """The client the current command's flags and the environment name, closed when the
    command ends (whatever its exit code).

    Raises:
        Fail: exit 2, naming the flag and the variable of what is missing or wrong.
    """
    ctx = click.get_current_context()
    try:
        given, endpoints = client_keywords(os.environ, ctx.meta.get(_CONFIG_KEY, {}), None)
        client = (Client.for_endpoints if endpoints else Client)(**given)
    except InvalidRequestError as exc:
        raise Fail(ExitCode.USAGE, str(exc)) from exc
    ctx.call_on_close(client.close)
    return client


def find_job(client: Client, submission_id: str) -> Job:
    """The job of ``submission_id``.

    Raises:
        Fail: exit 4, naming the id and the folder looked in, when there is none.
    """
    job = client.find(submission_id)
    if job is None:
        raise Fail(
            ExitCode.NOT_FOUND,
            f"no job for id {submission_id!r} under gs://{client.bucket}/{client.prefix}/",
        )
    return job


def config_flags() -> dict[str, str | None]:
    """The current command's configuration flags by setting name (``None`` when not given)."""
    return dict(click.get_current_context().meta.get(_CONFIG_KEY, {}))


class _StderrHandler(logging.Handler):
    """Writes log lines to whatever ``sys.stderr`` is when the line is logged.

    Without ``-v`` the retry policy's notices are left out: a call that keeps failing ends the
    command with its one error line, and one that recovers needs no line at all.
    """

    def __init__(self, *, retries: bool) -> None:
        super().__init__()
        self.retries = retries

    def filter(self, record: logging.LogRecord) -> bool:
        # The retry policy (vertexbatch/_retry.py) logs each retry as a warning, for library
        # users; the command shows them as details, under -v.
        if not self.retries and record.module == "_retry":
            return False
        return super().filter(record)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            click.echo(f"vertexbatch: {self.format(record)}", err=True)
        except Exception:  # pragma: no cover - logging must never break the command
            self.handleError(record)


def _set_verbosity(ctx: click.Context, param: click.Parameter, value: int) -> int:
    """``-v`` shows the library's INFO logs on stderr, ``-vv`` DEBUG; restored when done."""
    level = logging.WARNING if not value else logging.INFO if value == 1 else logging.DEBUG
    previous = ctx.meta.get("vertexbatch.verbosity")
    if previous is not None and previous <= level:
        return value  # the group's -v already set a level at least as verbose
    ctx.meta["vertexbatch.verbosity"] = level
    handler = _StderrHandler(retries=level <= logging.INFO)
    saved = (logger.level, logger.propagate)
    for old in [h for h in logger.handlers if isinstance(h, _StderrHandler)]:
        logger.removeHandler(old)
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False

    def restore() -> None:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]

    ctx.call_on_close(restore)
    return value


verbose = click.option(
    "-v",
    "--verbose",
    count=True,
    expose_value=False,
    callback=_set_verbosity,
    help="Show the library's INFO logs (created, adopted, recorded, cancelled); -vv for DEBUG.",
)

_HELP = {
    PROJECT: "Google Cloud project.",
    LOCATION: "Vertex region, e.g. us-central1.",
    BUCKET: "GCS bucket for jobs.",
    PREFIX: f"Folder in the bucket; each id gets PREFIX/ID/. [default: {DEFAULT_PREFIX}]",
    VERTEX_ENDPOINT: "Vertex endpoint URL (the local stack's); needs --storage-endpoint.",
    STORAGE_ENDPOINT: "GCS endpoint URL (the local stack's); needs --vertex-endpoint.",
}


def _config_option(setting: Setting) -> Callable[[F], F]:
    # No envvar: _config reads the variables, so a flag and its variable are resolved in one
    # place. The value goes to ctx.meta, not to the command's arguments: cloud_client() reads it.
    return click.option(
        setting.flag,
        setting.name,
        expose_value=False,
        callback=_remember,
        help=f"{_HELP[setting]} [env: {setting.variable}]",
    )


_CONFIG_OPTIONS = tuple(_config_option(setting) for setting in SETTINGS)

_MEANING = {
    PROJECT: "the project of the jobs",
    LOCATION: "the Vertex region",
    BUCKET: "the bucket of the jobs",
    PREFIX: f"default: {DEFAULT_PREFIX}",
    VERTEX_ENDPOINT: "local stack's Vertex URL",
    STORAGE_ENDPOINT: "local stack's GCS URL",
}
ENVIRONMENT_HELP = "\n".join(
    [
        "Environment: the commands that talk to Vertex read these variables, each the",
        "fallback of a flag (a flag wins); `vertexbatch emulator --env-file` writes them.",
        "",
        "\b",
        *(f"  {s.variable:<28} {s.flag:<18}  {_MEANING[s]}" for s in SETTINGS),
        f"  {'GOOGLE_APPLICATION_CREDENTIALS':<48} credentials (no endpoints)",
    ]
)
"""The variables the commands read, for ``vertexbatch --help``."""


def cloud_command(f: F) -> F:
    """Add the configuration flags (each with its environment variable) and ``-v``."""
    f = verbose(f)
    for option in reversed(_CONFIG_OPTIONS):
        f = option(f)
    return f


# A path, not click.File: a file that cannot be opened is the command's one-line error (exit 2),
# not click's usage text.
file_argument = click.argument("file", type=click.Path(allow_dash=True))
