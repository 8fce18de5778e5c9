"""``vertexbatch doctor --kms-key … --service-account …``: the job controls' checks.

``kms-key``: the key's form and region (``_vertex.controls``' rules), that it exists (Cloud KMS
``cryptoKeys.get``) and that the Vertex AI service agent (which runs the job) and the Cloud
Storage service agent (which encrypts what vertexbatch stages with it) may use it (the key's own
IAM policy, ``cryptoKeys.getIamPolicy``). ``service-account``: its form, that it exists (IAM
``serviceAccounts.get``) and that the caller may act as it (``serviceAccounts.testIamPermissions``
for ``iam.serviceAccounts.actAs``). Each speaks REST through an ``AuthorizedSession`` (anything
with its ``request``), and says "cannot tell" when it cannot see, never guessing: a grant made on
the key ring or the project is not in the key's own policy, so its absence there is a warn.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol
from urllib.parse import quote

from .._errors import InvalidRequestError
from .._vertex.controls import check_controls
from .doctor import LOOKUP_TIMEOUT, Check, brief

__all__ = [
    "ACT_AS",
    "IAM_API",
    "KMS_API",
    "KMS_ROLE",
    "Session",
    "check_kms_key",
    "check_service_account",
    "key_agents",
    "key_use",
]

KMS_API = "https://cloudkms.googleapis.com/v1"
IAM_API = "https://iam.googleapis.com/v1"
KMS_ROLE = "roles/cloudkms.cryptoKeyEncrypterDecrypter"
ACT_AS = "iam.serviceAccounts.actAs"
ACT_AS_ROLE = "roles/iam.serviceAccountUser"
# Roles that give a member both halves of a key's use (encrypt and decrypt), together or alone.
_ENCRYPT = {KMS_ROLE, "roles/cloudkms.cryptoKeyEncrypter"}
_DECRYPT = {KMS_ROLE, "roles/cloudkms.cryptoKeyDecrypter"}


class Session(Protocol):
    """What the checks need of ``google.auth.transport.requests.AuthorizedSession``."""

    def request(self, method: str, url: str, **kwargs: Any) -> Any: ...


def key_use(bindings: Iterable[Mapping[str, Any]], member: str) -> str:
    """Whether a key's own policy lets ``member`` (an email) use it: "yes", "no", or "unclear"
    (only under a condition doctor does not evaluate). Pure."""
    wanted = f"serviceAccount:{member}".lower()
    roles: set[str] = set()
    conditional = False
    for binding in bindings:
        members = {str(m).lower() for m in binding.get("members") or ()}
        if wanted not in members:
            continue
        if binding.get("condition"):
            conditional = True
            continue
        roles.add(str(binding.get("role", "")))
    if roles & _ENCRYPT and roles & _DECRYPT:
        return "yes"
    return "unclear" if conditional else "no"


def key_agents(project_number: str) -> tuple[str, str]:
    """The service agents that must use a job's key: Vertex AI's, and Cloud Storage's."""
    return (
        f"service-{project_number}@gcp-sa-aiplatform.iam.gserviceaccount.com",
        f"service-{project_number}@gs-project-accounts.iam.gserviceaccount.com",
    )


def _get(session: Session, method: str, url: str, body: Any = None) -> tuple[int, Any]:
    response = session.request(method, url, json=body, timeout=LOOKUP_TIMEOUT)
    try:
        data = response.json()
    except ValueError:
        data = None
    return int(response.status_code), data


def check_kms_key(
    session: Session | None, kms_key: str, location: str, project_number: str | None
) -> Check:
    """The key is a key in ``location``, exists, and the project's service agents
    (``key_agents``; ``project_number`` ``None``: not known) may use it. ``session``: ``None``
    where Cloud KMS cannot be reached (the local stack)."""
    try:
        check_controls(None, kms_key, None, location=location)
    except InvalidRequestError as exc:
        return Check("kms-key", "fail", f"{exc}.")
    if session is None:
        return Check("kms-key", "warn", "cannot tell: the local stack serves no Cloud KMS.")
    try:
        status, _ = _get(session, "GET", f"{KMS_API}/{kms_key}")
        if status == 404:
            return Check("kms-key", "fail", f"key {kms_key} does not exist: create it or name it.")
        if status != 200:
            return Check(
                "kms-key",
                "warn",
                f"cannot tell: Cloud KMS answered {status} for key {kms_key}; grant the caller "
                "cloudkms.cryptoKeys.get (roles/cloudkms.viewer) to let doctor look.",
            )
        if project_number is None:
            return Check(
                "kms-key",
                "warn",
                f"key {kms_key} exists; cannot tell whether the Vertex AI and Cloud Storage "
                "service agents may use it: the project number is not readable.",
            )
        url = f"{KMS_API}/{kms_key}:getIamPolicy?options.requestedPolicyVersion=3"
        status, policy = _get(session, "GET", url)
    except Exception as exc:
        return Check("kms-key", "warn", f"cannot tell: Cloud KMS failed ({brief(exc, 100)}).")
    agents = key_agents(project_number)
    if status != 200 or not isinstance(policy, dict):
        return Check(
            "kms-key",
            "warn",
            f"key {kms_key} exists; cannot tell whether {' and '.join(agents)} may use it: its "
            f"IAM policy is not readable ({status}); grant the caller "
            "cloudkms.cryptoKeys.getIamPolicy.",
        )
    uses = {agent: key_use(policy.get("bindings") or (), agent) for agent in agents}
    if all(use == "yes" for use in uses.values()):
        return Check("kms-key", "ok", f"key {kms_key} exists and {' and '.join(agents)} may use it")
    unshown = [agent for agent, use in uses.items() if use != "yes"]
    why = "only under a condition" if "unclear" in uses.values() else "not on the key itself"
    return Check(
        "kms-key",
        "warn",
        f"key {kms_key} exists; its policy grants {' and '.join(unshown)} {KMS_ROLE} {why} (a "
        "grant on the key ring or project is not visible here): if the create or an upload is "
        f"refused, grant {KMS_ROLE} on the key.",
    )


def check_service_account(session: Session | None, account: str) -> Check:
    """The account exists and the caller may act as it (``iam.serviceAccounts.actAs``)."""
    try:
        check_controls(None, None, account, location=None)
    except InvalidRequestError as exc:
        return Check("service-account", "fail", f"{exc}.")
    if session is None:
        return Check("service-account", "warn", "cannot tell: the local stack serves no IAM.")
    name = f"{IAM_API}/projects/-/serviceAccounts/{quote(account, safe='@.')}"
    try:
        status, _ = _get(session, "GET", name)
        if status == 404:
            return Check("service-account", "fail", f"service account {account} does not exist.")
        if status != 200:
            return Check(
                "service-account",
                "warn",
                f"cannot tell: IAM answered {status} for service account {account}; grant the "
                "caller iam.serviceAccounts.get to let doctor look.",
            )
        status, held = _get(
            session, "POST", f"{name}:testIamPermissions", {"permissions": [ACT_AS]}
        )
    except Exception as exc:
        return Check("service-account", "warn", f"cannot tell: IAM failed ({brief(exc, 100)}).")
    if status != 200 or not isinstance(held, dict):
        return Check(
            "service-account",
            "warn",
            f"service account {account} exists; cannot tell whether the caller may act as it "
            f"(testIamPermissions answered {status}).",
        )
    if ACT_AS in (held.get("permissions") or ()):
        return Check(
            "service-account",
            "ok",
            f"service account {account} exists and the caller may act as it (it needs read on "
            "the input and write on the output too)",
        )
    return Check(
        "service-account",
        "fail",
        f"the caller lacks {ACT_AS} on {account}: grant it {ACT_AS_ROLE} on the account.",
    )
