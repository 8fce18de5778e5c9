"""The repository's Dockerfile, checked without Docker (none where the tests run).

What is checked is what would break a build or a container from a fresh clone: every file a
stage copies from the build context exists and is let in by .dockerignore (and the package's
files with it), the extras it installs are extras of pyproject.toml, its entrypoints name files
the stage holds and functions those files define, it runs as a user other than root, and the
default (last) stage is the job's. The image itself is never built here;
tests/docs/test_wheel_install.py installs the same wheel with the same extras into a fresh
virtual environment and runs the job's entrypoint against the local stack.

docs/cloud-run.md's commands are checked against the flags of each gcloud command's reference
page (sources below), so that a flag misspelt or invented fails here.
"""

from __future__ import annotations

import ast
import fnmatch
import json
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
BASE_IMAGE = "python:3.11-slim"


@dataclass
class Stage:
    name: str
    parent: str
    workdir: str = "/"
    user: str | None = None
    files: dict[str, str] = field(default_factory=dict)  # image path -> repository path
    runs: list[str] = field(default_factory=list)
    entrypoint: list[str] | None = None
    env: dict[str, str] = field(default_factory=dict)


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of each instruction, continuation lines joined, comments out."""
    found: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        word, _, rest = line.partition(" ")
        found.append((word.upper(), rest.strip()))
    assert not pending, "the Dockerfile ends inside a continued line"
    return found


def stages(text: str = "") -> list[Stage]:
    """The Dockerfile's stages, each with what it inherits from the stage it starts from."""
    built: list[Stage] = []
    by_name: dict[str, Stage] = {}
    for word, args in instructions(text or DOCKERFILE.read_text()):
        if word == "FROM":
            image, _, name = args.partition(" AS ")
            image, name = image.strip(), name.strip()
            parent = by_name.get(image)
            stage = Stage(name=name, parent=image)
            if parent is not None:
                stage.workdir, stage.user = parent.workdir, parent.user
                stage.files, stage.env = dict(parent.files), dict(parent.env)
                stage.runs, stage.entrypoint = list(parent.runs), parent.entrypoint
            built.append(stage)
            by_name[name] = stage
            continue
        stage = built[-1]
        if word == "WORKDIR":
            stage.workdir = str(PurePosixPath(stage.workdir, args))
        elif word == "USER":
            stage.user = args
        elif word == "RUN":
            stage.runs.append(args)
        elif word == "ENTRYPOINT":
            stage.entrypoint = json.loads(args)
        elif word == "ENV":
            for pair in shlex.split(args):
                key, _, value = pair.partition("=")
                stage.env[key] = value
        elif word == "COPY":
            parts = shlex.split(args)
            if parts[0].startswith("--from="):
                continue  # from another stage, not from the build context
            *sources, dest = parts
            for source in sources:
                target = PurePosixPath(stage.workdir, dest)
                if dest.endswith("/") or len(sources) > 1:
                    target = target / PurePosixPath(source).name
                stage.files[str(target)] = source
    return built


def context_sources() -> list[str]:
    """Every path COPY takes from the build context, in any stage."""
    return sorted({source for stage in stages() for source in stage.files.values()})


def installed_extras() -> set[str]:
    """The extras the runtime stage installs the wheel with (``"${wheel}[cli]"``)."""
    runs = " ".join(sorted({run for stage in stages() for run in stage.runs}))
    found = re.findall(r'"\$\{wheel\}\[([a-z0-9,-]+)\]"', runs)
    assert len(found) == 1, f"expected one install of the wheel with its extras, found {found}"
    return set(found[0].split(","))


def _ignored(path: str, patterns: list[str]) -> bool:
    """Whether .dockerignore keeps ``path`` out of the context (the last matching line wins;
    a line matching a parent folder matches what is in it)."""
    parts = PurePosixPath(path).parts
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    ignored = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        body = pattern.lstrip("!").rstrip("/")
        shapes = {body, body.removeprefix("**/")}
        if any(fnmatch.fnmatchcase(c, s) for c in candidates for s in shapes):
            ignored = not negate
    return ignored


def _dockerignore() -> list[str]:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_every_stage_starts_from_the_slim_python_or_a_stage() -> None:
    built = stages()
    names = {stage.name for stage in built}
    for stage in built:
        assert stage.parent in names | {BASE_IMAGE}, stage
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == ">=3.11"  # what python:3.11 satisfies


def test_what_it_copies_exists_and_is_in_the_build_context() -> None:
    patterns = _dockerignore()
    for source in context_sources():
        assert (ROOT / source).exists(), f"the Dockerfile copies {source}, which does not exist"
        assert not _ignored(source, patterns), f".dockerignore leaves out {source}"
    package = [
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "vertexbatch").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    ]
    assert package and not [p for p in package if _ignored(p, patterns)]
    assert _ignored("vertexbatch/__pycache__/x.pyc", patterns)
    assert _ignored("tests/conftest.py", patterns) and _ignored(".venv", patterns)


def test_the_wheel_is_built_from_what_the_build_needs() -> None:
    """The builder stage copies the package, pyproject.toml and the readme it names."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    needed = {"pyproject.toml", pyproject["project"]["readme"]}
    needed |= set(pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"])
    [builder] = [stage for stage in stages() if stage.name == "builder"]
    assert needed <= set(builder.files.values()), needed - set(builder.files.values())
    assert any("build --wheel" in run for run in builder.runs)


def test_the_extras_it_installs_are_the_projects() -> None:
    extras = installed_extras()
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert extras and extras <= set(declared["optional-dependencies"]), extras
    # The runtime needs none of the local stack, BigQuery or the dev tools.
    assert extras == {"cli"}
    assert "vertexbatch" in declared["scripts"]  # `--command=vertexbatch` in docs/cloud-run.md


def test_the_default_stage_is_the_job_and_runs_its_entrypoint() -> None:
    job = stages()[-1]
    assert job.name == "job"
    assert job.entrypoint is not None and job.entrypoint[0] == "python"
    script = str(PurePosixPath(job.workdir, job.entrypoint[1]))
    assert script in job.files, f"{script} is not copied into the job stage"
    source = ROOT / job.files[script]
    assert source.is_file() and source.name == "cloud_run_job.py"
    assert 'if __name__ == "__main__":' in source.read_text()


def _functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}


def test_the_handlers_stage_serves_each_handler_docs_name() -> None:
    """functions-framework serves FUNCTION_TARGET from FUNCTION_SOURCE, both set at deploy."""
    [handlers] = [stage for stage in stages() if stage.name == "handlers"]
    assert handlers.entrypoint == ["functions-framework"]
    assert handlers.env.get("FUNCTION_SIGNATURE_TYPE") == "http"
    assert any("functions-framework" in run for run in handlers.runs)
    page = (ROOT / "docs" / "cloud-run.md").read_text()
    pairs = re.findall(r"FUNCTION_TARGET: (\w+)`?,?\s*`?FUNCTION_SOURCE: (examples/\w+\.py)", page)
    assert {target for target, _ in pairs} == {"advance", "poll"}, pairs
    for target, source in pairs:
        image_path = str(PurePosixPath(handlers.workdir, source))
        assert handlers.files.get(image_path) == source, f"{source} is not in the handlers image"
        assert target in _functions(ROOT / source), f"{source} defines no {target}()"


def test_it_runs_as_a_user_other_than_root() -> None:
    for stage in stages():
        if stage.entrypoint is not None:
            assert stage.user not in (None, "root", "0"), stage.name
    useradd = [run for stage in stages() for run in stage.runs if "useradd" in run]
    assert useradd and all(f" {stages()[-1].user}" in run for run in useradd)


def test_the_parser_sees_a_copy_left_out_by_dockerignore() -> None:
    """The checks above can fail: a source the context lacks, an extra pyproject lacks."""
    made = stages(
        "FROM python:3.11-slim AS job\nWORKDIR /app\nCOPY tests/helpers.py ./\n"
        'RUN pip install "${wheel}[gpu]"\nENTRYPOINT ["python", "helpers.py"]\n'
    )
    assert made[0].files == {"/app/helpers.py": "tests/helpers.py"}
    assert _ignored("tests/helpers.py", _dockerignore())
    assert made[0].user is None


# Each gcloud command docs/cloud-run.md and docs/operations.md run, and the flags its reference
# page lists (read 2026-12-07, https://cloud.google.com/sdk/gcloud/reference/<command path>;
# the global flags, such as --project and --format, are allowed for every command).
GCLOUD_FLAGS = {
    "services enable": set(),
    "artifacts repositories create": {"repository-format", "location", "description"},
    "builds submit": {"tag", "region", "config"},
    "auth configure-docker": set(),
    "iam service-accounts create": {"display-name", "description"},
    "projects add-iam-policy-binding": {"member", "role", "condition"},
    "storage buckets add-iam-policy-binding": {"member", "role", "condition"},
    "storage buckets update": {"lifecycle-file"},
    "run jobs deploy": {
        "image",
        "region",
        "service-account",
        "tasks",
        "parallelism",
        "max-retries",
        "task-timeout",
        "set-env-vars",
        "env-vars-file",
        "args",
        "command",
        "memory",
        "cpu",
    },
    "run jobs execute": {"region", "args", "update-env-vars", "tasks", "task-timeout", "wait"},
    "run jobs add-iam-policy-binding": {"member", "role", "region"},
    "run deploy": {
        "image",
        "region",
        "allow-unauthenticated",
        "no-allow-unauthenticated",
        "service-account",
        "set-env-vars",
        "env-vars-file",
    },
    "run services add-iam-policy-binding": {"member", "role", "region"},
    "run services describe": {"region"},
    "scheduler jobs create http": {
        "location",
        "schedule",
        "uri",
        "http-method",
        "headers",
        "message-body",
        "time-zone",
        "oauth-service-account-email",
        "oauth-token-scope",
        "oidc-service-account-email",
        "oidc-token-audience",
    },
}
GLOBAL_FLAGS = {"project", "format", "quiet", "verbosity"}
_FENCE = re.compile(r"^```[a-z]*\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def gcloud_commands(page: str) -> list[tuple[str, list[str]]]:
    """Each gcloud command in the page's code blocks: its command path and its flags."""
    found = []
    for block in _FENCE.findall((ROOT / "docs" / page).read_text()):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("$(", 1)[-1] if "$(gcloud" in line else line
            if not line.lstrip().startswith("gcloud "):
                continue
            words = shlex.split(line.rstrip(")"))[1:]
            path = [w for w in words if not w.startswith("-")]
            command = next(
                (
                    c
                    for c in sorted(GCLOUD_FLAGS, key=len, reverse=True)
                    if " ".join(path).startswith(c)
                ),
                " ".join(path[:3]),
            )
            flags = [w[2:].split("=", 1)[0] for w in words if w.startswith("--")]
            found.append((command, flags))
    return found


@pytest.mark.parametrize("page", ["cloud-run.md", "operations.md"])
def test_gcloud_commands_use_flags_their_reference_lists(page: str) -> None:
    commands = gcloud_commands(page)
    assert commands
    for command, flags in commands:
        assert command in GCLOUD_FLAGS, f"docs/{page}: gcloud {command} is not in GCLOUD_FLAGS"
        unknown = set(flags) - GCLOUD_FLAGS[command] - GLOBAL_FLAGS
        assert not unknown, f"docs/{page}: gcloud {command} has no flag {sorted(unknown)}"


def test_the_recipe_keeps_its_handlers_private() -> None:
    """Each handler's service: no unauthenticated calls, the scheduler's account as invoker,
    the scheduler's call with an OIDC token of that account; the job started by the Admin API
    with an OAuth token."""
    commands = gcloud_commands("cloud-run.md")
    deploys = [flags for command, flags in commands if command == "run deploy"]
    assert deploys and all("no-allow-unauthenticated" in flags for flags in deploys)
    assert not any("allow-unauthenticated" in flags for _, flags in commands)
    schedules = [flags for command, flags in commands if command == "scheduler jobs create http"]
    assert (
        sum("oidc-service-account-email" in f and "oidc-token-audience" in f for f in schedules)
        >= 1
    )
    assert sum("oauth-service-account-email" in f for f in schedules) >= 1
    page = (ROOT / "docs" / "cloud-run.md").read_text()
    assert page.count("--role=roles/run.invoker") >= 2
    assert "--role=roles/aiplatform.user" in page and "--role=roles/storage.objectAdmin" in page


def test_the_flag_check_fails_on_an_unknown_flag() -> None:
    line = "gcloud run deploy x --image=i --allow-everyone"
    words = shlex.split(line)[1:]
    flags = {w[2:].split("=", 1)[0] for w in words if w.startswith("--")}
    assert flags - GCLOUD_FLAGS["run deploy"] == {"allow-everyone"}
