"""The catalogue's prices in bands by prompt size (``rates_above``): the form of every banded
row, its sources, and the shipped table that carries the bands (pure)."""

from __future__ import annotations

import math
from typing import Any

import pytest

import vertexbatch as vb
from vertexbatch._catalogue import BAND_FIELDS, Band, Model, catalogue, model_entry
from vertexbatch._catalogue.entries import _model

BANDED = [model for model in catalogue() if model.rates is not None and model.rates.above]


def test_the_banded_rows_are_haiku_5_5_and_the_gemini_pro_rows() -> None:
    assert {model.id for model in BANDED} == {
        "claude-haiku-5-5", "gemini-2.5-pro", "gemini-3.1-pro-preview",
    }  # fmt: skip


@pytest.mark.parametrize("model", BANDED, ids=lambda m: m.id)
def test_every_band_is_well_formed_and_sourced(model: Model) -> None:
    """A positive whole threshold; every rate finite, from 0; input and output together; the
    row cites the page its bands were read from (an https source with a date)."""
    assert model.rates is not None and model.rates.above is not None
    band = model.rates.above
    assert type(band.prompt_tokens) is int and band.prompt_tokens > 0
    for name in BAND_FIELDS[1:]:
        value = getattr(band, name)
        assert value is None or (math.isfinite(value) and value >= 0), (model.id, name)
    assert (band.input is None) == (band.output is None)
    assert model.sources and all(s.url.startswith("https://") and s.read for s in model.sources)


def test_haiku_5_5_is_priced_in_both_bands_from_anthropic_s_page() -> None:
    entry = model_entry("claude-haiku-5-5@default")
    assert entry is not None and entry.rates is not None
    assert (entry.rates.input, entry.rates.output, entry.rates.cache_write) == (0.1, 0.5, 0.125)
    band = entry.rates.above
    assert band is not None and band.prompt_tokens == 100_000
    assert (band.input, band.output, band.cache_write) == (0.5, 2.5, 0.625)
    assert entry.rates.cache_read is None and band.cache_read is None  # no copy gave it
    assert any("platform.claude.com" in s.url and "haiku-5-5" in s.url for s in entry.sources)


def test_the_price_table_carries_the_bands() -> None:
    for model in BANDED:
        price = next(p for p in vb.PRICES if p.match == model.id)
        assert model.rates is not None and model.rates.above is not None
        assert price.above == vb.PriceBand(
            **{name: getattr(model.rates.above, name) for name in BAND_FIELDS}
        )
    assert all(p.above is None for p in vb.PRICES if p.match not in {m.id for m in BANDED})


ROW: dict[str, Any] = {
    "id": "claude-x",
    "publisher": "anthropic",
    "rates": {"input": 1, "output": 2},
}


@pytest.mark.parametrize(
    ("above", "said"),
    [
        ({"prompt_tokens": 0, "input": 1, "output": 2}, "positive whole number"),
        ({"prompt_tokens": 1.5}, "positive whole number"),
        ({"prompt_tokens": True}, "positive whole number"),
        ({"input": 1, "output": 2}, "positive whole number"),
        ({"prompt_tokens": 10, "inputs": 1}, r"unknown fields \['inputs'\]"),
        ({"prompt_tokens": 10, "input": 1}, "input and output both"),
        ({"prompt_tokens": 10, "cache_write": 1}, "cache rates without"),
        ({"prompt_tokens": 10, "input": -1, "output": 2}, r"\['input'\] must be prices"),
        ({"prompt_tokens": 10, "input": "1", "output": 2}, r"\['input'\] must be prices"),
        (5, "must be a table"),
    ],
)
def test_a_bad_band_is_refused_naming_the_model(above: object, said: str) -> None:
    with pytest.raises(ValueError, match=f"'claude-x': rates_above.*{said}"):
        _model({**ROW, "rates_above": above})


def test_a_band_without_rates_below_it_is_refused() -> None:
    row = {key: value for key, value in ROW.items() if key != "rates"}
    with pytest.raises(ValueError, match="rates_above without rates"):
        _model({**row, "rates_above": {"prompt_tokens": 10, "input": 1, "output": 2}})
    # A threshold alone: a page says prompts over it cost more, no page gives the rates.
    rates = _model({**ROW, "rates_above": {"prompt_tokens": 10}}).rates
    assert rates is not None and rates.above == Band(10)
