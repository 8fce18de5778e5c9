"""The command's ``--price``: one model's online list prices in one shell word, read into the
``Price`` the Python call takes (pure).

``MODEL=INPUT,OUTPUT``, then optionally ``cache_read=R``, ``cache_write=W`` and
``until=YYYY-MM-DD`` (``Price``'s keyword names), then optionally, last,
``above=N:INPUT,OUTPUT`` with the band's own optional ``cache_read=R`` and ``cache_write=W``:
what follows ``above=`` is the ``PriceBand`` of prompts over ``N`` tokens, as ``above=`` comes
last in ``Price``. ``until=`` is the whole price's last day (``Price.until``, UTC, as a catalogue
row's ``rates_until``): a ``PriceBand`` has no day of its own, so ``until=`` after ``above=`` is
refused. Commas, ``=`` and ``:`` are plain characters in a shell, so the word needs no quoting
(a ``;`` would end the command there).
"""

from __future__ import annotations

import datetime
import re

import click

from .._errors import InvalidRequestError
from .._plans.prices import MAX_PRICE, Price, PriceBand

__all__ = ["PRICE_FORM", "parse_price"]

PRICE_FORM = (
    "MODEL=INPUT,OUTPUT[,cache_read=R][,cache_write=W][,until=YYYY-MM-DD]"
    "[,above=N:INPUT,OUTPUT[,cache_read=R][,cache_write=W]]"
)
_RULE = (
    f"--price is {PRICE_FORM}: online list prices in US dollars per million tokens as the "
    f"pricing page prints them (batch bills half), each a number from 0 to {MAX_PRICE:,}; "
    "until=YYYY-MM-DD, before above=, is the last day the whole price holds (UTC); "
    "above=N, last, gives the rates of prompts over N tokens (N a whole number from 1), its "
    "input and output both, its cache rates optional (e.g. claude-opus-4-1=15,75 or "
    "claude-haiku-5-5=0.1,0.5,cache_write=0.125,above=100000:0.5,2.5,cache_write=0.625)"
)
_CACHE_RATES = ("cache_read", "cache_write")
_BAND = "above"
_UNTIL = "until"
_DIGITS = re.compile(r"[0-9]+", re.ASCII)
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", re.ASCII)


class _Refused(Exception):
    """What is wrong with one part of the word (the caller adds the word and the rule)."""


def parse_price(text: str) -> Price:
    """``--price``'s word as ``Price``: the same value ``vb.Price(MODEL, INPUT, OUTPUT,
    cache_read=R, cache_write=W, above=vb.PriceBand(N, INPUT, OUTPUT, ...),
    until=datetime.date(YYYY, MM, DD))`` is.

    Raises:
        click.BadParameter: a malformed word, naming its bad part and the rule.
    """
    try:
        return _price(text)
    except (_Refused, InvalidRequestError) as exc:
        raise click.BadParameter(f"{text!r:.200}: {exc}. {_RULE}", param_hint="--price") from None


def _price(text: str) -> Price:
    model, equals, rates = text.partition("=")
    if not equals:
        raise _Refused("no '=' between MODEL and its rates")
    if not model:
        raise _Refused("no MODEL before '='")
    parts = rates.split(",")
    at = next((i for i, part in enumerate(parts) if part.startswith(f"{_BAND}=")), len(parts))
    input_, output, cache_read, cache_write, until = _rates(parts[:at], "")
    lower = (input_, output, cache_read, cache_write)
    if at == len(parts):
        return Price(model, *lower, until=until)
    threshold, colon, first = parts[at].removeprefix(f"{_BAND}=").partition(":")
    if not _DIGITS.fullmatch(threshold) or int(threshold) == 0:
        raise _Refused(
            f"above={threshold!r:.40} is no threshold: a whole number of prompt tokens from 1, "
            "digits only (e.g. above=200000)"
        )
    if not colon:
        raise _Refused(f"above={threshold} has no rates: above=N:INPUT,OUTPUT")
    where = f" of the band over {threshold} prompt tokens"
    band = PriceBand(int(threshold), *_rates([first, *parts[at + 1 :]], where)[:4])
    return Price(model, *lower, above=band, until=until)


def _rates(
    parts: list[str], where: str
) -> tuple[float, float, float | None, float | None, datetime.date | None]:
    """INPUT, OUTPUT, cache_read and cache_write of the price or its band (``where`` says
    which), in ``Price``'s order, then the price's ``until`` (never a band's); a cache rate or
    day not given is ``None``."""
    if len(parts) < 2 or any("=" in part for part in parts[:2]):
        given = ",".join(parts[:2])
        raise _Refused(f"INPUT,OUTPUT{where} come first, two numbers, got {given!r:.60}")
    input_, output = _number(parts[0], f"INPUT{where}"), _number(parts[1], f"OUTPUT{where}")
    cache: dict[str, float] = {}
    until: datetime.date | None = None
    for part in parts[2:]:
        if not part:
            raise _Refused(f"an empty rate{where} (a comma too many)")
        name, equals, value = part.partition("=")
        if not equals:
            raise _Refused(
                f"{part!r:.40}{where} is not named: after INPUT,OUTPUT a rate is cache_read=R "
                "or cache_write=W"
            )
        if name == _BAND:
            raise _Refused("one band only: a second above=")
        if name == _UNTIL and where:
            raise _Refused(
                f"until={value!r:.40}{where}: until= is the whole price's last day, a band has "
                "none of its own: give it before above="
            )
        if name not in (*_CACHE_RATES, _UNTIL):
            raise _Refused(
                f"{name!r:.40}{where} is no rate --price takes: cache_read, cache_write, "
                "until, then above"
            )
        if name in cache or (name == _UNTIL and until is not None):
            raise _Refused(f"{name}{where} is given twice")
        if name == _UNTIL:
            until = _day(value)
        else:
            cache[name] = _number(value, f"{name}{where}")
    return input_, output, cache.get("cache_read"), cache.get("cache_write"), until


def _day(text: str) -> datetime.date:
    """``until=``'s day: a calendar date written YYYY-MM-DD, nothing else ISO 8601 allows."""
    try:
        if _DAY.fullmatch(text) is None:
            raise ValueError(text)
        return datetime.date.fromisoformat(text)
    except ValueError:
        raise _Refused(
            f"until={text!r:.40} is no day: the price's last day (UTC) as YYYY-MM-DD, a date "
            "on the calendar (e.g. until=2026-12-31)"
        ) from None


def _number(text: str, name: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise _Refused(f"{text!r:.40} ({name}) is not a number") from None
    # NaN fails both comparisons; an overflow is infinite.
    if not 0 <= value <= MAX_PRICE:
        raise _Refused(f"{text!r:.40} ({name}) is not a list price from 0 to {MAX_PRICE:,}")
    return value
