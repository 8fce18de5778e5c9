"""The examples run against the local stack."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import vertexbatch as vb
from tests.helpers import EXAMPLES, claude_requests, load, write_jsonl
from vertexbatch.emulator import LocalStack

CLAUDE = "claude-sonnet-4-5"


def ids_on_vertex(stack: LocalStack, bucket: str) -> list[str]:
    return [
        j["displayName"]
        for j in stack.jobs()
        if j["inputConfig"]["gcsSource"]["uris"][0].startswith(f"gs://{bucket}/")
    ]


# -- cloud_run_job.py ---------------------------------------------------------------------------


def test_cloud_run_job_retried_task_adopts_the_job(
    stack: LocalStack,
    stack_env: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Outside the task variables the file is one run; a retry (same execution) rejoins it."""
    cloud_run_job = load("cloud_run_job")
    path = write_jsonl(
        tmp_path / "requests.jsonl",
        ({"key": r.key, "params": dict(r.params)} for r in claude_requests(4)),
    )
    monkeypatch.setenv("CLOUD_RUN_EXECUTION", "review-batch-x7k2p")
    for name in ("CLOUD_RUN_TASK_INDEX", "CLOUD_RUN_TASK_COUNT", "CLOUD_RUN_TASK_ATTEMPT"):
        monkeypatch.delenv(name, raising=False)
    argv = ["--provider", "claude", "--model", CLAUDE, str(path)]
    assert cloud_run_job.main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    assert cloud_run_job.main(argv) == 0  # the retry
    second = json.loads(capsys.readouterr().out)
    assert first == second and first["run"] == "review-batch-x7k2p" and first["keys"] == 4
    assert ids_on_vertex(stack, stack_env) == ["review-batch-x7k2p.s0"]


def test_cloud_run_job_tasks_stage_one_run(
    stack: LocalStack,
    stack_env: str,
    client: vb.Client,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Two tasks (and a retry of the first) stage every other Gemini line into one run."""
    cloud_run_job = load("cloud_run_job")
    path = write_jsonl(
        tmp_path / "requests.jsonl", ({"key": f"t{i}", "contents": f"Ticket {i}"} for i in range(5))
    )
    monkeypatch.setenv("CLOUD_RUN_EXECUTION", "triage-abc12")
    monkeypatch.setenv("CLOUD_RUN_TASK_COUNT", "2")
    argv = ["--provider", "gemini", "--model", "gemini-2.5-flash", str(path)]
    printed = []
    for index, attempt in (("0", "0"), ("0", "1"), ("1", "0")):
        monkeypatch.setenv("CLOUD_RUN_TASK_INDEX", index)
        monkeypatch.setenv("CLOUD_RUN_TASK_ATTEMPT", attempt)
        assert cloud_run_job.main(argv, client=client) == 0
        printed.append(json.loads(capsys.readouterr().out))
    assert printed[0]["waiting_for_tasks"] == [1] and printed[0]["keys"] == 3
    assert printed[1] == printed[0]  # the retry adopted what the first attempt staged
    assert printed[2]["waiting_for_tasks"] == [] and printed[2]["keys"] == 5
    run = client.open_run("triage-abc12")
    assert [s.keys for s in run.shards] == [3, 2]
    assert sorted(ids_on_vertex(stack, stack_env)) == ["triage-abc12.s0", "triage-abc12.s1"]


def test_cloud_run_job_tasks_stage_their_shares_of_a_prefix(
    stack: LocalStack,
    stack_env: str,
    client: vb.Client,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Three tasks stage their shares of a GCS prefix's files (one share is empty) into one run."""
    cloud_run_job = load("cloud_run_job")
    bucket = stack.storage_client().bucket(stack_env)
    for number, keys in enumerate([range(3), range(3, 5)]):
        lines = [json.dumps({"key": f"r{i}", "params": {"max_tokens": 8, "messages": [
            {"role": "user", "content": f"Review {i}"}]}}) for i in keys]  # fmt: skip
        bucket.blob(f"in/part-{number:05d}.jsonl").upload_from_string("\n".join(lines))
    monkeypatch.setenv("CLOUD_RUN_EXECUTION", "prefix-q8")
    monkeypatch.setenv("CLOUD_RUN_TASK_COUNT", "3")
    argv = ["--provider", "claude", "--model", CLAUDE, f"gs://{stack_env}/in/"]
    printed = []
    for index in ("0", "1", "2"):
        monkeypatch.setenv("CLOUD_RUN_TASK_INDEX", index)
        assert cloud_run_job.main(argv, client=client) == 0
        printed.append(json.loads(capsys.readouterr().out))
    assert printed[-1]["waiting_for_tasks"] == [] and printed[-1]["keys"] == 5
    assert sorted(r.key for r in client.open_run("prefix-q8").results()) == [
        f"r{i}" for i in range(5)
    ]


# -- scheduler_poller.py ------------------------------------------------------------------------


@pytest.fixture
def poller(stack_env: str) -> Any:
    """The poller's Flask test client, as functions-framework serves it."""
    from functions_framework import create_app

    app = create_app(target="poll", source=str(EXAMPLES / "scheduler_poller.py"))  # type: ignore[no-untyped-call]
    return app.test_client()


def test_scheduler_poller_reports_and_writes_summary_once(
    stack: LocalStack, stack_env: str, client: vb.Client, poller: Any
) -> None:
    """Status while running; once terminal the summary is written once, create-only."""
    stack.faults.hold("poll-1")
    requests = [
        *claude_requests(3),
        vb.ClaudeRequest(
            "slow-down",
            {"max_tokens": 9, "messages": [{"role": "user", "content": "x [[vb:error 429]]"}]},
        ),
    ]
    job = client.submit_claude("poll-1", CLAUDE, requests)
    running = poller.post("/", json={"id": "poll-1"})
    assert running.status_code == 200
    assert running.get_json() == {
        "id": "poll-1",
        "job": job.name,
        "state": "JOB_STATE_PENDING",
        "terminal": False,
        "succeeded": -1,
        "failed": -1,
    }
    stack.faults.release("poll-1")
    stack.wait_job(job.name)

    first = poller.post("/", json={"id": "poll-1"}).get_json()
    assert first["terminal"] is True and first["written"] is True
    assert first["summary"] == f"gs://{stack_env}/summaries/poll-1.json"
    blob = stack.storage_client().bucket(stack_env).get_blob("summaries/poll-1.json")
    assert blob is not None
    summary = json.loads(blob.download_as_bytes())
    assert summary["outcomes"] == {
        "ok": 3,
        "refused": 0,
        "truncated": 0,
        "retryable": 1,
        "failed": 0,
        "missing": 0,
    }
    assert summary["resubmit"] == ["slow-down"]

    again = poller.post("/", json={"id": "poll-1"}).get_json()  # at-least-once redelivery
    assert again["written"] is False
    after = stack.storage_client().bucket(stack_env).get_blob("summaries/poll-1.json")
    assert after is not None and after.generation == blob.generation


def test_scheduler_poller_write_once_is_create_only(stack: LocalStack, stack_env: str) -> None:
    """Two overlapping calls that both reach the write: the second one does not overwrite."""
    poller_module = load("scheduler_poller")
    bucket = stack.storage_client().bucket(stack_env)
    assert poller_module.write_once(bucket, "summaries/x.json", {"n": 1}) is True
    assert poller_module.write_once(bucket, "summaries/x.json", {"n": 2}) is False
    blob = bucket.get_blob("summaries/x.json")
    assert blob is not None and json.loads(blob.download_as_bytes()) == {"n": 1}


def test_scheduler_poller_bad_and_unknown_ids(poller: Any) -> None:
    """No id is 400; an invalid id is 400 naming the rule; an unknown id is 404."""
    assert poller.post("/", data="nope").status_code == 400
    assert poller.post("/", json={"id": "Bad Id"}).status_code == 400
    missing = poller.post("/", json={"id": "poll-none"})
    assert missing.status_code == 404
    assert missing.get_json() == {"id": "poll-none", "error": "no job for this id"}


# -- agent_executor.py --------------------------------------------------------------------------


def test_agent_executor_maps_outcomes_and_resubmits(stack: LocalStack, client: vb.Client) -> None:
    """Tasks come back by id; retryable and missing ones are resubmitted under ID.r1."""
    agent = load("agent_executor")
    tasks = [
        agent.Task("t-ok", "Summarise the incident."),
        agent.Task("t-refused", "Do it. [[vb:refuse]]"),
        agent.Task("t-429", "Classify. [[vb:error 429]]"),
        agent.Task("t-dropped", "Translate. [[vb:drop]]"),
    ]
    stack.faults.hold("agent-1")  # PENDING until the executor first waits
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        stack.faults.release("agent-1")

    executor = agent.BatchExecutor(client, floor=0.01, ceiling=0.02, sleep=sleep)
    done = executor.run("agent-1", tasks)
    assert {k: (r.outcome, r.attempts, r.submission_id) for k, r in done.items()} == {
        "t-ok": ("ok", 1, "agent-1"),
        "t-refused": ("refused", 1, "agent-1"),
        # The local model answers the same request the same way: still failing on the resubmit.
        "t-429": ("retryable", 2, "agent-1.r1"),
        "t-dropped": ("missing", 2, "agent-1.r1"),
    }
    assert done["t-ok"].text
    resubmitted = client.find("agent-1.r1")
    assert resubmitted is not None and resubmitted.keys == 2
    assert sleeps and all(0.01 <= s <= 0.02 for s in sleeps)


def test_agent_executor_rerun_adopts_every_job(stack: LocalStack, client: vb.Client) -> None:
    """An executor that runs again with the same batch id creates no job."""
    agent = load("agent_executor")
    tasks = [agent.Task("a", "One."), agent.Task("b", "Two. [[vb:error 503]]")]
    agent.BatchExecutor(client, floor=0.01, sleep=lambda s: None).run("agent-2", tasks)
    creates = stack.calls()["create"]
    agent.BatchExecutor(client, floor=0.01, sleep=lambda s: None).run("agent-2", tasks)
    assert stack.calls()["create"] == creates


def test_agent_executor_wait_times_out(stack: LocalStack, client: vb.Client) -> None:
    """The executor gives up with WaitTimeout when the job stays live past the timeout."""
    agent = load("agent_executor")
    stack.faults.hold("agent-3")
    executor = agent.BatchExecutor(client, floor=0.01, timeout=0.05)
    with pytest.raises(vb.WaitTimeout, match="still JOB_STATE_PENDING"):
        executor.run("agent-3", [agent.Task("key-0", "Summarise item 0.")])
    assert client.find("agent-3") is not None


@pytest.mark.processes
def test_agent_executor_main(capsys: pytest.CaptureFixture[str]) -> None:
    """`python examples/agent_executor.py` runs on its own local stack."""
    load("agent_executor").main()
    out = capsys.readouterr().out
    assert "summarise-incident-311       ok         after 1 attempt(s) (agent-run-1)" in out
    assert "classify-email-9001          retryable  after 2 attempt(s) (agent-run-1.r1)" in out


# -- embeddings_index.py ------------------------------------------------------------------------


def test_embeddings_index_reads_every_vector_back(stack: LocalStack, client: vb.Client) -> None:
    """Each document's vector comes back by its key; a failed line is reported, not dropped;
    the query ranks every indexed document."""
    example = load("embeddings_index")
    index = example.build_index(client, "idx-1", example.DOCUMENTS)
    assert sorted(index.vectors) == ["doc-bread", "doc-rivers", "doc-stars"]
    assert all(len(v) == example.DIMENSIONS for v in index.vectors.values())
    assert index.failed == {"doc-busy": "retryable"}
    ranked = example.search(client, "idx-q", index, "Where does water flow?")
    assert sorted(key for key, _ in ranked) == sorted(index.vectors)
    assert all(-1.0001 <= score <= 1.0001 for _, score in ranked)


@pytest.mark.processes
def test_embeddings_index_main(capsys: pytest.CaptureFixture[str]) -> None:
    """`python examples/embeddings_index.py` runs on its own local stack."""
    load("embeddings_index").main()
    out = capsys.readouterr().out
    assert "doc-rivers   256 floats" in out
    assert "doc-busy     retryable" in out


# -- structured_agent.py ------------------------------------------------------------------------


def test_structured_agent_acts_on_parsed_values_and_tool_calls(
    stack: LocalStack, client: vb.Client
) -> None:
    """Answers become Triage values or tool calls; a SchemaError is resubmitted once."""
    agent = load("structured_agent")
    tickets = [
        ("t-ok", "I was charged twice."),
        ("t-call", "Where is order 7? [[vb:tool_call name=lookup_order]]"),
        ("t-bad", "It crashes. [[vb:nonconforming]]"),
    ]
    actions = agent.TriageAgent(client, sleep=lambda s: stack.settle()).triage("tri-1", tickets)
    assert actions["t-ok"].kind == "route" and actions["t-ok"].detail == "billing"
    assert actions["t-call"].kind == "lookup" and actions["t-call"].detail.startswith(
        "lookup_order toolu_"
    )
    # The local model answers the same request the same way: still outside the schema.
    assert (actions["t-bad"].kind, actions["t-bad"].detail) == ("failed", "SchemaError")
    again = client.find("tri-1.r1")
    assert again is not None and again.keys == 1


@pytest.mark.processes
def test_structured_agent_main(capsys: pytest.CaptureFixture[str]) -> None:
    """`python examples/structured_agent.py` runs on its own local stack."""
    load("structured_agent").main()
    out = capsys.readouterr().out
    assert "ticket-101   route   billing" in out
    assert "ticket-102   lookup  lookup_order toolu_" in out
    assert "ticket-103   failed  SchemaError" in out


# -- tool_loop.py -------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["claude", "gemini"])
def test_tool_loop_runs_each_turn_as_a_batch(
    stack: LocalStack, stack_env: str, provider: str
) -> None:
    """Turn 1 calls the tool; each step is a fresh client and storage client, reading only what
    is parked in GCS; turn 2 answers with text, and the loop ends with every answer."""
    from google.cloud import storage

    loop = load("tool_loop")
    questions = {"oslo": "Wear? [[vb:tool_call name=weather]]", "lima": "Beach? [[vb:tool_call]]"}
    with vb.Client.from_env() as client:
        bucket = storage.Client(project=client.project).bucket(client.bucket)
        loop.start(client, bucket, "loop-1", provider, questions)
    answers = None
    for _ in range(6):
        stack.settle()
        with vb.Client.from_env() as client:  # a new process each tick: nothing kept in memory
            bucket = storage.Client(project=client.project).bucket(client.bucket)
            answers = loop.step(client, bucket, "loop-1")
        if answers is not None:
            break
    assert answers is not None and set(answers) == set(questions)
    assert all(text.startswith("Local model answer") for text in answers.values()), answers
    parked = sorted(blob.name for blob in bucket.list_blobs(prefix="loop-1/"))
    assert parked == ["loop-1/turn-1.json", "loop-1/turn-2.json", "loop-1/turn-3.json"]
    with vb.Client.from_env() as client:
        assert client.find("loop-1-turn-2") is not None and client.find("loop-1-turn-3") is None


@pytest.mark.processes
def test_tool_loop_main(capsys: pytest.CaptureFixture[str]) -> None:
    """`python examples/tool_loop.py` runs both loops on its own local stack."""
    load("tool_loop").main()
    out = capsys.readouterr().out
    assert "claude  lima  Local model answer" in out
    assert "gemini  oslo  Local model answer" in out
