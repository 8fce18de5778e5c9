"""The catalogue against the lists Google's pages give (read whole in the docs mirror, see
docs/platform-facts.md): the Claude batch page's models carry batch and its quota of 4 jobs, the
open-model batch page's models are rows, and a model whose lane takes no batch job on ``global``
lists somewhere else its jobs can run, or no location at all (pure)."""

from __future__ import annotations

from vertexbatch._catalogue import catalogue, model_entry
from vertexbatch._providers import of_model

# Google's Claude batch page, version of 2026-07-29 (Claude 3.5 Haiku is not catalogued).
CLAUDE_BATCH = (
    "claude-sonnet-5",
    "claude-opus-5",
    "claude-fable-5",
    "claude-opus-4-8",
    "claude-opus-4-7",
    "claude-opus-4-6",
    "claude-sonnet-4-6",
    "claude-opus-4-5",
    "claude-opus-4-1",
    "claude-opus-4",
    "claude-sonnet-4-5",
    "claude-sonnet-4",
    "claude-haiku-4-5",
)

# Google's open-model batch page, version of 2026-06-02, beyond its Llama models.
OPEN_BATCH = (
    "openai/gpt-oss-120b-maas",
    "openai/gpt-oss-20b-maas",
    "qwen/qwen3-coder-480b-a35b-instruct-maas",
    "qwen/qwen3-235b-a22b-instruct-2507-maas",
    "deepseek-ai/deepseek-v3.2-maas",
    "deepseek-ai/deepseek-v3.1-maas",
    "deepseek-ai/deepseek-r1-0528-maas",
)


def test_the_claude_batch_page_s_models_take_batch_four_jobs_at_once() -> None:
    for model in CLAUDE_BATCH:
        entry = model_entry(model)
        assert entry is not None and entry.batch, model
        assert entry.concurrent_jobs == 4, model


def test_the_open_model_batch_page_s_models_are_rows() -> None:
    for model in OPEN_BATCH:
        entry = model_entry(model)
        assert entry is not None and entry.batch, model
        assert entry.publisher == model.partition("/")[0], model


def test_a_row_whose_lane_takes_no_global_batch_lists_a_place_its_jobs_can_run() -> None:
    """Claude and open-model batch take no ``global`` endpoint: a row listing only ``global``
    would leave its batch jobs nowhere to run (the local stack serves a row only where it
    lists); such a model records no location instead."""
    for model in catalogue():
        row = of_model(model.id)
        assert row is not None, model.id
        if not row.global_batch and model.locations:
            assert model.locations - {"global"}, model.id
