"""``vertexbatch doctor``'s checks of a BigQuery dataset a job writes to (or reads from).

Given ``--dest bq://PROJECT.DATASET[.TABLE]`` (the same for a table a source names: ``side``
names the checks), four checks, each one ``Check`` as ``doctor``'s are:

    dest-dataset     the dataset exists (``bigquery.Client.get_dataset``); a table named in a
                     source must exist too (a sink's table is created by the job)
    dest-location    the dataset's location is one the job's location can use
                     (``dataset_location_fit``)
    dest-caller      the caller may read the results: ``bigquery.readsessions.create`` on the
                     client's project and ``bigquery.tables.getData`` (Resource Manager
                     ``projects.testIamPermissions``; a dataset-level grant is not visible
                     there, so a missing ``getData`` is "cannot tell")
    dest-agent       the dataset's access entries let the job's account (the Vertex AI service
                     agent, or ``--service-account``) write (read, for a source); "cannot tell"
                     when the entries are not visible or do not say (project roles such as
                     ``roles/bigquery.user``, which the job also needs, are not visible here)

The region rule: the Gemini page on batch prediction from BigQuery says "The job and your table
must be in the same region" (https://cloud.google.com/vertex-ai/generative-ai/docs/multimodal/
batch-prediction-from-bigquery), while the custom-model batch page lets a job in ``us-central1``
use ``US`` (https://cloud.google.com/vertex-ai/docs/predictions/get-batch-predictions). So a
dataset in the job's region is ``ok``, one in a multi-region holding it is "cannot tell" (warn),
any other is ``fail``. A lookup that got no answer says so with the network fix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._bigquery.dest import Dest, parse_dest
from .doctor import LOOKUP_TIMEOUT, Check, Outcome, brief, no_answer
from .doctor_rules import bucket_location_fit, service_agent

if TYPE_CHECKING:
    from google.cloud import bigquery, resourcemanager_v3

    from .._config import Config

# google-cloud-bigquery's own variable for a BigQuery REST endpoint (the local stack exports it).
EMULATOR_HOST = "BIGQUERY_EMULATOR_HOST"

__all__ = [
    "READ_PERMISSIONS",
    "dest_checks",
    "SAME_REGION_SOURCE",
    "access_grants",
    "check_bigquery",
    "dataset_location_fit",
]

SAME_REGION_SOURCE = "https://cloud.google.com/vertex-ai/generative-ai/docs/multimodal/batch-prediction-from-bigquery"
READ_PERMISSIONS = ("bigquery.readsessions.create", "bigquery.tables.getData")
# Dataset roles (legacy and IAM) that carry bigquery.tables.updateData / getData.
_WRITE_ROLES = frozenset(
    {
        "WRITER",
        "OWNER",
        "roles/bigquery.dataEditor",
        "roles/bigquery.dataOwner",
        "roles/bigquery.admin",
    }
)
_READ_ROLES = _WRITE_ROLES | {"READER", "roles/bigquery.dataViewer"}


def dataset_location_fit(region: str, location: str) -> tuple[Outcome, str]:
    """Whether a dataset at ``location`` (as BigQuery reports it: ``us-central1``, ``US``)
    serves a job in ``region``: (ok/warn/fail, why). Pure."""
    here = f"the dataset is in {location}"
    if region.lower() == "global":
        return "warn", f"{here}; a job on the global endpoint has no region to match it to"
    if location.lower() == region.lower():
        return "ok", f"{here}, the job's region"
    fit, _ = bucket_location_fit(region, location, "multi-region")
    if location.lower() in ("us", "eu") and fit == "ok":
        return "warn", (
            f"{here}, a multi-region that holds {region}: Vertex's BigQuery batch page says the "
            f"job and the table must be in the same region ({SAME_REGION_SOURCE})"
        )
    return "fail", f"{here}, not the job's region {region}"


def access_grants(entries: Iterable[Mapping[str, Any]], member: str, write: bool) -> bool | None:
    """Whether a dataset's access entries grant ``member`` write (or read): True, or None when
    they do not say (a project role, a group, a custom role may grant it). Pure."""
    roles = _WRITE_ROLES if write else _READ_ROLES
    for entry in entries:
        who = entry.get("userByEmail") or entry.get("iamMember", "").removeprefix("serviceAccount:")
        if who == member and entry.get("role") in roles:
            return True
    return None


def check_bigquery(
    bq: bigquery.Client,
    projects: resourcemanager_v3.ProjectsClient,
    uri: str,
    location: str,
    project: str,
    *,
    side: str = "dest",
    agent_number: str | None = None,
    service_account: str | None = None,
) -> list[Check]:
    """The four checks of the dataset ``uri`` names, for a job in ``location`` of ``project``.

    ``agent_number``: the project number (the service agent's), None when not readable;
    ``service_account``: the job's own account, checked instead of the agent.
    """
    dest = parse_dest(uri, f"--{side}")
    names = [f"{side}-{n}" for n in ("dataset", "location", "caller", "agent")]
    found = _dataset(bq, dest, names[0], side)
    if found.result != "ok" or found.dataset is None:
        return [found.check, *(Check(n, "skip", f"needs {names[0]}") for n in names[1:])]
    dataset = found.dataset
    where = str(dataset.location or "")
    if where:
        fit, why = dataset_location_fit(location, where)
        said = {"ok": why, "warn": f"cannot tell: {why}.", "fail": f"{why}: use one in {location}."}
        placed = Check(names[1], fit, said[fit])
    else:
        placed = Check(names[1], "warn", f"cannot tell: {dest.dataset_uri} shows no location")
    return [
        found.check,
        placed,
        _caller(projects, project, names[2]),
        _agent(dataset, dest, names[3], side, agent_number, service_account),
    ]


class _Found:
    def __init__(self, check: Check, dataset: bigquery.Dataset | None = None) -> None:
        self.check = check
        self.result = check.result
        self.dataset = dataset


def _dataset(bq: bigquery.Client, dest: Dest, name: str, side: str) -> _Found:
    from google.api_core import exceptions as api_exceptions
    from google.api_core.retry import Retry

    once = Retry(predicate=lambda _: False)  # one answer, as every lookup of doctor's
    target = f"{dest.project}.{dest.dataset}"
    try:
        dataset = bq.get_dataset(target, retry=once, timeout=LOOKUP_TIMEOUT)
        if dest.table and side != "dest":
            bq.get_table(f"{target}.{dest.table}", retry=once, timeout=LOOKUP_TIMEOUT)
    except api_exceptions.NotFound as exc:
        what = dest.uri if "table" in str(exc.message).lower() else dest.dataset_uri
        return _Found(Check(name, "fail", f"{what} does not exist: create it in the job's region."))
    except api_exceptions.Forbidden as exc:
        return _Found(
            Check(
                name, "warn", f"cannot tell: {dest.dataset_uri} is not visible ({brief(exc, 100)})"
            )
        )
    except Exception as exc:
        silent = no_answer(exc, "BigQuery")
        return _Found(Check(name, "warn", f"cannot tell: {silent or brief(exc, 100)}"))
    return _Found(Check(name, "ok", f"{dest.dataset_uri} exists"), dataset)


def _caller(projects: resourcemanager_v3.ProjectsClient, project: str, name: str) -> Check:
    try:
        held = set(
            projects.test_iam_permissions(
                resource=f"projects/{project}",
                permissions=list(READ_PERMISSIONS),
                retry=None,
                timeout=LOOKUP_TIMEOUT,
            ).permissions
        )
    except Exception as exc:
        silent = no_answer(exc, "Resource Manager")
        return Check(name, "warn", f"cannot tell: {silent or brief(exc, 100)}")
    session, data = READ_PERMISSIONS
    if session not in held:
        return Check(
            name,
            "fail",
            f"the caller lacks {session} on project {project}, which reading the results "
            "needs: grant it roles/bigquery.readSessionUser there.",
        )
    if data not in held:
        return Check(
            name,
            "warn",
            f"cannot tell: the caller holds no {data} on project {project}; a grant on the "
            "dataset is not visible here (roles/bigquery.dataViewer on it reads the results).",
        )
    return Check(name, "ok", f"the caller may read results in project {project}")


def _agent(
    dataset: bigquery.Dataset,
    dest: Dest,
    name: str,
    side: str,
    number: str | None,
    account: str | None,
) -> Check:
    member = account or (service_agent(number) if number else "")
    if not member:
        return Check(
            name, "warn", "cannot tell: the project number (the service agent's) is not readable"
        )
    write = side == "dest"
    verb = "write to" if write else "read"
    entries = [entry.to_api_repr() for entry in dataset.access_entries]
    if not entries:
        return Check(
            name,
            "warn",
            f"cannot tell whether {member} may {verb} {dest.dataset_uri}: it shows no access "
            "entries (the local stack's BigQuery serves none).",
        )
    if access_grants(entries, member, write):
        return Check(name, "ok", f"{member} may {verb} {dest.dataset_uri}")
    role = "roles/bigquery.dataEditor" if write else "roles/bigquery.dataViewer"
    return Check(
        name,
        "warn",
        f"cannot tell: {dest.dataset_uri}'s access entries do not show {member} may {verb} it, "
        f"and project roles are not visible here: if jobs fail, grant it {role} on the "
        "dataset and roles/bigquery.user on the project.",
    )


def dest_checks(
    env: Mapping[str, str],
    flags: Mapping[str, str | None] | None,
    earlier: Sequence[Check],
    uri: str,
    service_account: str | None,
    projects_of: Callable[[Config], resourcemanager_v3.ProjectsClient],
    side: str = "dest",
) -> list[Check]:
    """``check_bigquery`` as ``run_checks`` runs it after the others: skipped without the
    configuration or credentials, or without the ``bigquery`` extra; its clients built here
    (anonymous at ``BIGQUERY_EMULATOR_HOST`` on the local stack)."""
    from importlib.util import find_spec

    from .._bigquery.read import MISSING_EXTRA, missing_extra
    from .._config import read_config
    from .doctor import on_local_stack
    from .doctor_access import project_number

    names = [f"{side}-{n}" for n in ("dataset", "location", "caller", "agent")]
    results = {check.check: check.result for check in earlier}
    why = (
        "needs the configuration"
        if results.get("configuration") == "fail"
        else "needs credentials"
        if results.get("credentials") == "fail"
        else f"needs {MISSING_EXTRA.partition('needs ')[2]}"
        if missing_extra() or find_spec("google.cloud.bigquery") is None
        else ""
    )
    if why:
        return [Check(name, "skip", why) for name in names]
    config = read_config(env, flags)
    from google.cloud import bigquery

    if on_local_stack(config):
        from google.auth.credentials import AnonymousCredentials

        options = {"api_endpoint": env.get(EMULATOR_HOST) or config.vertex_endpoint}
        bq = bigquery.Client(
            project=config.project,
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            client_options=options,
        )
    else:
        bq = bigquery.Client(project=config.project)
    projects = projects_of(config)
    try:
        number: str | None = project_number(projects, config.project)
    except Exception:  # the agent check says it cannot tell
        number = None
    try:
        return check_bigquery(
            bq,
            projects,
            uri,
            config.location,
            config.project,
            side=side,
            agent_number=number,
            service_account=service_account,
        )
    finally:
        bq.close()  # type: ignore[no-untyped-call]
