"""The catalogue's last day of a price (``rates_until``): read from a TOML date, refused in any
other form naming the row and the rule, carried into the price table (pure)."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

import vertexbatch as vb
from vertexbatch._catalogue import catalogue, catalogue_from, model_entry

LAUNCH_SOURCE = (
    "https://github.com/api-evangelist/deepmind/blob/47a9772bdb46163b5e5560285bbc88bb11b86073"
    "/plans/deepmind-plans-pricing.yml"
)


def _file(folder: Path, until: str, *, rates: bool = True) -> Path:
    """A one-row catalogue file whose row says ``rates_until = <until>`` (TOML as written)."""
    path = folder / "models.toml"
    path.write_text(
        "[[model]]\n"
        'id = "gemini-x"\n'
        'publisher = "google"\n'
        + ("rates = { input = 1.0, output = 2.0 }\n" if rates else "")
        + f"rates_until = {until}\n",
        encoding="utf-8",
    )
    return path


def test_a_toml_date_is_the_last_day_the_rates_hold(tmp_path: Path) -> None:
    (row,) = catalogue_from(_file(tmp_path, "2026-12-31"))
    assert row.rates is not None and row.rates.until == datetime.date(2026, 12, 31)
    assert (row.rates.input, row.rates.output) == (1.0, 2.0)


@pytest.mark.parametrize(
    "until",
    [
        '"2026-12-31"',  # a string: quoted
        "2026-12-31T00:00:00",  # a local date-time: a time, not a day
        "2026-12-31T00:00:00Z",  # an offset date-time
        "12:00:00",  # a time alone
        "20261231",  # a number
        "true",
        "[2026-12-31]",
    ],
)
def test_a_last_day_that_is_not_a_toml_date_is_refused_naming_the_row(
    tmp_path: Path, until: str
) -> None:
    with pytest.raises(ValueError, match=r"models\.toml: model 'gemini-x': rates_until must be a "
                       r"TOML date, the last day the rates hold \(rates_until = 2026-12-31, "
                       r"unquoted, no time\), got "):  # fmt: skip
        catalogue_from(_file(tmp_path, until))


def test_a_last_day_without_rates_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="'gemini-x': rates_until without rates"):
        catalogue_from(_file(tmp_path, "2026-12-31", rates=False))


def test_gemini_3_8_flash_holds_its_launch_rates_until_2026_12_31_with_the_source() -> None:
    """Google's Gemini API pricing page (through a verbatim copy): $0.75 / $3.75 "through
    December 31, 2026"; the row keeps them with that last day and cites the copy."""
    entry = model_entry("gemini-3.8-flash")
    assert entry is not None and entry.rates is not None
    assert (entry.rates.input, entry.rates.output, entry.rates.cache_read) == (0.75, 3.75, 0.075)
    assert entry.rates.until == datetime.date(2026, 12, 31)
    assert any(s.url == LAUNCH_SOURCE and s.read == "2026-12-07" for s in entry.sources)
    # The price table carries the day; no other row has one.
    price = next(p for p in vb.PRICES if p.match == "gemini-3.8-flash")
    assert price.until == datetime.date(2026, 12, 31)
    assert [m.id for m in catalogue() if m.rates is not None and m.rates.until is not None] == [
        "gemini-3.8-flash"
    ]


@pytest.mark.parametrize(
    "until",
    ["2026-12-31", datetime.datetime(2026, 12, 31, tzinfo=datetime.UTC), 20261231],
)
def test_a_price_s_last_day_is_a_date(until: object) -> None:
    with pytest.raises(vb.InvalidRequestError, match=r"until must be a datetime\.date") as err:
        vb.Price("gemini-x", 1.0, 2.0, until=until)  # type: ignore[arg-type]
    assert err.value.field == "prices"
    assert vb.Price("gemini-x", 1.0, 2.0, until=datetime.date(2026, 12, 31)).until is not None
