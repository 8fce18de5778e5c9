"""A run's spend is priced on the day each shard's jobs were created (their done records keep
it, ``priced_on``), not on the day it is read: a price's last day (``Price.until``) is held to
the answers' days. A record without the day (an earlier vertexbatch's) is priced on today's.

Through the stack, the price's last day is set with the catalogue's seam (``catalogue_of``: the
model's row, its rates ending on a given day), and a job "created two days ago" is the run's own
records saying so (its ended record's ``created`` and its done record's ``priced_on``), as a
run advanced two days ago would have left them."""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import pytest
from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import task
from vertexbatch._catalogue import catalogue, catalogue_of, model_entry
from vertexbatch._command.cli import main
from vertexbatch._runs.usage import RunSpend, Tally
from vertexbatch.emulator import LocalStack

MODEL = "claude-opus-5-5@default"
FAMILY = "claude-opus-5-5"
D1 = datetime.date(2026, 12, 30)
D2 = datetime.date(2026, 12, 31)  # the price's last day below
D3 = datetime.date(2027, 1, 1)
_ENDS = [vb.Price(FAMILY, 5.0, 25.0, until=D2)]


def _answer(key: str, input: int = 100, output: int = 10) -> vb.Result:
    return vb.Result(key=key, text="x", usage=vb.Usage(input=input, output=output))


def test_a_tally_keeps_the_latest_day_of_what_it_paid_for() -> None:
    """The latest day of a paid answer; an unpaid one's day does not count; one paid answer
    without a day makes the shard's day unknown (priced on today's)."""
    tally = Tally()
    assert tally.day is None
    tally.add(_answer("a"), "batch", D2)
    tally.add(_answer("b"), "batch", D1)
    tally.add(vb.Result(key="c", usage=vb.Usage(input=5), cached=True), "batch", D3)
    tally.add(vb.Result(key="d", error=vb.MissingError("gone", key="d")), "batch", None)
    assert tally.day == D2
    tally.add(_answer("e"), "standard", None)
    assert tally.day is None


def _run(*shards: tuple[datetime.date | None, int], today: datetime.date) -> vb.Spend:
    spent = RunSpend("anthropic", MODEL, _ENDS, canary={"standard": (1, 10, 10, 0, 0)}, today=today)
    for index, (day, answers) in enumerate(shards):
        spent.add(f"run.s{index}", {"batch": (answers, 100 * answers, 10 * answers, 0, 0)}, day)
    spend = spent.spend(len(shards))
    assert spend is not None
    return spend


def test_a_run_is_priced_on_its_shards_days_not_today() -> None:
    """Jobs created by the price's last day are priced at it, read on any later day; one shard
    whose job was created after it makes the spend unknown, read on any day, naming both
    days; the canary (answered before any job) never moves the day, and is priced on today's
    when no shard paid for anything."""
    known = _run((D1, 2), (D2, 3), today=D3 + datetime.timedelta(days=30))
    expected = (5 * 100 * 5 + 25 * 10 * 5) * 0.5 / 1e6 + (5 * 10 + 25 * 10) / 1e6
    assert known.dollars == pytest.approx(expected) and known.tiers == {"batch": 5, "standard": 1}
    late = _run((D1, 2), (D3, 1), today=D3)
    assert late.dollars is None and late.answers == 4
    assert late.notes[0].startswith(
        f"the price read for model {MODEL!r} holds until {D2.isoformat()}, before {D3.isoformat()}"
    )
    assert late.summary().startswith("spend unknown (the price read for model")
    # Shards that paid nothing (the answer cache answered them): the canary alone, on today's.
    assert _run((None, 0), today=D2).dollars == pytest.approx((5 * 10 + 25 * 10) / 1e6)
    nothing_paid = _run((None, 0), today=D3)
    assert nothing_paid.dollars is None and "does not say" not in " ".join(nothing_paid.notes)


def test_a_shard_recorded_without_its_day_is_priced_on_today() -> None:
    """An earlier vertexbatch's record (usage, no day): priced on today's date, as before, and
    the notes say so; unknown once today is past the price's last day, never its figure."""
    today_before = _run((None, 2), (D1, 1), today=D2)
    assert today_before.dollars is not None and today_before.dollars > 0
    assert today_before.notes[-1] == (
        "run.s0: its record does not say the day its jobs were created (an earlier "
        f"vertexbatch wrote it), priced on today's date, {D2.isoformat()} (UTC)"
    )
    today_after = _run((None, 2), (None, 1), (D1, 1), today=D3)
    assert today_after.dollars is None
    assert f"before {D3.isoformat()}" in today_after.notes[0]
    assert "run.s0 and 1 more shard(s): its record does not say" in today_after.notes[-1]


@contextmanager
def ending(until: datetime.date) -> Iterator[None]:
    """The catalogue with MODEL's rates holding until ``until`` (its other rows as shipped)."""
    row = model_entry(MODEL)
    assert row is not None and row.rates is not None
    ended = replace(row, rates=replace(row.rates, until=until))
    with catalogue_of(ended if model is row else model for model in catalogue()):
        yield


def _today() -> datetime.date:
    return datetime.datetime.now(datetime.UTC).date()


def _edit(stack: LocalStack, bucket: str, name: str, **fields: str) -> dict[str, str]:
    """Rewrite fields of one of the run's JSON records in GCS; returns the old values."""
    blob = stack.storage_client().bucket(bucket).blob(f"jobs/{name}")
    record = json.loads(blob.download_as_bytes())
    old = {key: record[key] for key in fields}
    record.update(fields)
    blob.upload_from_string(json.dumps(record))
    return old


def _finished(client: vb.Client, stack: LocalStack, run_id: str) -> tuple[vb.Run, datetime.date]:
    """A run of one shard finished from its job; the day (UTC) Vertex created the job."""
    run = client.run_claude(run_id, MODEL, [task(i) for i in range(2)], shard_size=2)
    job = client.find(f"{run_id}.s0")
    assert job is not None
    stack.wait_job(job.name)
    created = client.status(job).created
    assert created is not None
    assert run.advance().done
    return run, created.astimezone(datetime.UTC).date()


def test_a_run_s_spend_is_priced_on_the_day_vertex_created_its_jobs(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """The shard's done record keeps the day Vertex created its job. A job created two days
    ago, when the price held (it ended yesterday): the run's status, `run status` and `run
    results` price it today; a price that ended the day before the job: unknown."""
    run, job_day = _finished(client, stack, "spend-day")
    record = stack.storage_client().bucket(bucket).blob("jobs/spend-day.s0/done.json")
    assert json.loads(record.download_as_bytes())["priced_on"] == job_day.isoformat()
    ago = _today() - datetime.timedelta(days=2)
    created = _edit(stack, bucket, "spend-day.s0/ended.json", created="")["created"]
    moved = datetime.datetime.fromisoformat(created) - (job_day - ago)
    _edit(stack, bucket, "spend-day.s0/ended.json", created=moved.isoformat())
    _edit(stack, bucket, "spend-day.s0/done.json", priced_on=ago.isoformat())
    run.advance()  # the progress record keeps the shard with its day; status reads it there
    progress = stack.storage_client().bucket(bucket).blob("jobs/spend-day/progress.json")
    assert json.loads(progress.download_as_bytes())["done"]["0"].endswith(f" {ago.isoformat()}")
    env = stack.environment(bucket, prefix="jobs")
    with ending(_today() - datetime.timedelta(days=1)):
        spends = [run.status().spend, client.open_run("spend-day").status().spend]
        for spend in spends:
            assert spend is not None and spend.dollars is not None and spend.dollars > 0
        shown = CliRunner().invoke(main, ["run", "status", "spend-day", "--json"], env=env)
        assert json.loads(shown.stdout)["spend"]["dollars"] == pytest.approx(spends[0].dollars)
        results = CliRunner().invoke(main, ["run", "results", "spend-day"], env=env)
        assert f"; spend {spends[0]} at batch prices" in results.stderr, results.stderr
        assert [item.priced_on for item in run.key_results()] == [ago, ago]
    before = ago - datetime.timedelta(days=1)
    with ending(before):
        for spend in (run.status().spend, run.advance().spend):
            assert spend is not None and spend.dollars is None and spend.answers == 2
            assert f"holds until {before.isoformat()}, before {ago.isoformat()}" in spend.notes[0]
        results = CliRunner().invoke(main, ["run", "results", "spend-day"], env=env)
        assert "; spend unknown (the price read for model" in results.stderr, results.stderr


def test_online_answers_are_priced_on_the_day_their_shard_was_answered(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Shard 1 answered online past the deadline: its record keeps the day it was answered
    (today), its keys say it, and the run is priced on it, not on shard 0's job's day."""
    stack.faults.hold(display_name="spend-online.s1", state="PENDING")
    run = client.run_claude("spend-online", MODEL, [task(i) for i in range(4)], shard_size=2)
    job = client.find("spend-online.s0")
    assert job is not None
    stack.wait_job(job.name)
    assert run.advance().spend is not None  # finishes shard 0 from its job
    ago = _today() - datetime.timedelta(days=2)  # shard 0's job created two days ago
    created = _edit(stack, bucket, "spend-online.s0/ended.json", created="")["created"]
    moved = datetime.datetime.fromisoformat(created) - datetime.timedelta(days=2)
    _edit(stack, bucket, "spend-online.s0/ended.json", created=moved.isoformat())
    _edit(stack, bucket, "spend-online.s0/done.json", priced_on=ago.isoformat())
    before = _today()
    past = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=1)
    summary = run.advance(deadline=past, fallback="online")
    answered = _today()
    assert summary.done and summary.spend is not None and summary.spend.dollars is not None
    blob = stack.storage_client().bucket(bucket).blob("jobs/spend-online.s1/done.json")
    day = datetime.date.fromisoformat(json.loads(blob.download_as_bytes())["priced_on"])
    assert before <= day <= answered
    assert {item.result.key: item.priced_on for item in run.key_results()} == {
        "key-0": ago, "key-1": ago, "key-2": day, "key-3": day,
    }  # fmt: skip
    with ending(day - datetime.timedelta(days=1)):  # held on shard 0's day, not on shard 1's
        spend = run.status().spend
        assert spend is not None and spend.dollars is None
        assert f"before {day.isoformat()}" in spend.notes[0]


def test_a_record_of_an_earlier_version_is_priced_on_today(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A done record with usage and no day (as the version before this one wrote them): its
    spend is today's, as before, saying so; unknown when today is past the price's last day,
    though its job was created when the price held."""
    run, _ = _finished(client, stack, "spend-undated")
    run.advance()  # the progress record keeps the shard, with its day
    blob = stack.storage_client().bucket(bucket).blob("jobs/spend-undated.s0/done.json")
    record = json.loads(blob.download_as_bytes())
    del record["priced_on"]
    blob.upload_from_string(json.dumps(record))
    today = _today()
    with ending(today):
        spend = run.status().spend
        assert spend is not None and spend.dollars is not None and spend.dollars > 0
        assert spend.notes[-1] == (
            "spend-undated.s0: its record does not say the day its jobs were created (an "
            f"earlier vertexbatch wrote it), priced on today's date, {today.isoformat()} (UTC)"
        )
    _edit(stack, bucket, "spend-undated.s0/ended.json", created="2000-01-01T00:00:00+00:00")
    with ending(today - datetime.timedelta(days=1)):
        for spend in (run.status().spend, run.advance().spend, run.status().spend):
            assert spend is not None and spend.dollars is None
            assert f"before {today.isoformat()}" in spend.notes[0]
