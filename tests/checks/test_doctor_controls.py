"""``doctor``'s ``kms-key`` and ``service-account`` checks, with a stand-in for the
``AuthorizedSession`` they speak Cloud KMS and IAM REST through (no real service can be had here).

The stand-in answers each (method, URL) as the real APIs answer it: ``cryptoKeys.get`` and
``getIamPolicy`` (a policy's ``bindings``), ``serviceAccounts.get`` and ``testIamPermissions``
(``{"permissions": [...]}``, or ``{}`` when none is held).
"""

from __future__ import annotations

from typing import Any

import pytest

from vertexbatch._checks.doctor_controls import (
    ACT_AS,
    IAM_API,
    KMS_API,
    KMS_ROLE,
    check_kms_key,
    check_service_account,
    key_agents,
    key_use,
)
from vertexbatch._checks.doctor_run import run_checks
from vertexbatch.emulator import LocalStack

KEY = "projects/p/locations/us-central1/keyRings/ring/cryptoKeys/key"
NUMBER = "123"
AGENT, STORAGE_AGENT = key_agents(NUMBER)
ACCOUNT = "runner@p.iam.gserviceaccount.com"
POLICY = f"{KMS_API}/{KEY}:getIamPolicy?options.requestedPolicyVersion=3"
ACCOUNT_URL = f"{IAM_API}/projects/-/serviceAccounts/{ACCOUNT}"


class Answer:
    def __init__(self, status: int, data: Any) -> None:
        self.status_code = status
        self._data = data

    def json(self) -> Any:
        if self._data is None:
            raise ValueError("no JSON")
        return self._data


class StandIn:
    """Answers (method, url) from a table; anything else is a 404, an exception is raised."""

    def __init__(self, answers: dict[tuple[str, str], Any]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, str, Any]] = []

    def request(self, method: str, url: str, **kwargs: Any) -> Answer:
        self.asked.append((method, url, kwargs.get("json")))
        answer = self.answers.get((method, url), (404, {"error": {"code": 404}}))
        if isinstance(answer, Exception):
            raise answer
        return Answer(*answer)


def _grant(role: str, member: str = AGENT, **extra: Any) -> dict[str, Any]:
    return {"role": role, "members": [f"serviceAccount:{member}"], **extra}


def _both(role: str = KMS_ROLE, **extra: Any) -> list[dict[str, Any]]:
    """The grant to both agents the key's use needs (Vertex AI's and Cloud Storage's)."""
    return [
        {
            "role": role,
            "members": [f"serviceAccount:{AGENT}", f"serviceAccount:{STORAGE_AGENT}"],
            **extra,
        }
    ]


def _key(policy: Any, key_status: int = 200, policy_status: int = 200) -> StandIn:
    return StandIn(
        {
            ("GET", f"{KMS_API}/{KEY}"): (key_status, {"name": KEY}),
            ("GET", POLICY): (policy_status, policy),
        }
    )


@pytest.mark.parametrize(
    ("bindings", "use"),
    [
        ([_grant(KMS_ROLE)], "yes"),
        (
            [
                _grant("roles/cloudkms.cryptoKeyEncrypter"),
                _grant("roles/cloudkms.cryptoKeyDecrypter"),
            ],
            "yes",
        ),
        ([_grant("roles/cloudkms.cryptoKeyEncrypter")], "no"),
        ([_grant(KMS_ROLE, member="someone@p.iam.gserviceaccount.com")], "no"),
        ([_grant(KMS_ROLE, condition={"expression": "request.time < x"})], "unclear"),
        ([{"role": KMS_ROLE, "members": [f"serviceAccount:{AGENT.upper()}"]}], "yes"),
        ([], "no"),
    ],
)
def test_key_use_reads_only_what_the_keys_policy_says(bindings: Any, use: str) -> None:
    assert key_use(bindings, AGENT) == use


def test_a_key_both_agents_may_use_is_ok() -> None:
    check = check_kms_key(_key({"bindings": _both()}), KEY, "us-central1", NUMBER)
    assert check.result == "ok" and AGENT in check.detail and STORAGE_AGENT in check.detail


def test_a_key_only_vertex_may_use_warns_naming_cloud_storages_agent() -> None:
    """Staging writes with the key through Cloud Storage's own service agent: it must use it too."""
    check = check_kms_key(_key({"bindings": [_grant(KMS_ROLE)]}), KEY, "us-central1", NUMBER)
    assert check.result == "warn"
    assert STORAGE_AGENT in check.detail and AGENT not in check.detail


@pytest.mark.parametrize(
    ("session", "number", "result", "said"),
    [
        (_key({}, key_status=404), NUMBER, "fail", "does not exist"),
        (_key({}, key_status=403), NUMBER, "warn", "cannot tell"),
        (_key({"bindings": []}), NUMBER, "warn", "not on the key itself"),
        (
            _key({"bindings": _both(condition={"expression": "x"})}),
            NUMBER,
            "warn",
            "only under a condition",
        ),
        (_key(None, policy_status=403), NUMBER, "warn", "cannot tell"),
        (_key({"bindings": _both()}), None, "warn", "cannot tell"),
        (StandIn({("GET", f"{KMS_API}/{KEY}"): ConnectionError("down")}), NUMBER, "warn", "cannot"),
        (None, NUMBER, "warn", "cannot tell"),
    ],
)
def test_what_the_key_check_cannot_see_it_says_never_guessing(
    session: Any, number: str | None, result: str, said: str
) -> None:
    check = check_kms_key(session, KEY, "us-central1", number)
    assert (check.result, check.check) == (result, "kms-key")
    assert said in check.detail


def test_a_key_of_another_region_fails_before_any_call() -> None:
    session = _key({"bindings": _both()})
    check = check_kms_key(session, KEY, "europe-west4", NUMBER)
    assert check.result == "fail" and "not the client's" in check.detail
    assert not session.asked


def _account(held: Any, get_status: int = 200, test_status: int = 200) -> StandIn:
    return StandIn(
        {
            ("GET", ACCOUNT_URL): (get_status, {"email": ACCOUNT}),
            ("POST", f"{ACCOUNT_URL}:testIamPermissions"): (test_status, held),
        }
    )


def test_an_account_the_caller_may_act_as_is_ok() -> None:
    session = _account({"permissions": [ACT_AS]})
    check = check_service_account(session, ACCOUNT)
    assert check.result == "ok"
    assert session.asked[-1][2] == {"permissions": [ACT_AS]}


@pytest.mark.parametrize(
    ("session", "result", "said"),
    [
        (_account({}), "fail", "lacks iam.serviceAccounts.actAs"),
        (_account({}, get_status=404), "fail", "does not exist"),
        (_account({}, get_status=403), "warn", "cannot tell"),
        (_account(None, test_status=403), "warn", "cannot tell"),
        (None, "warn", "cannot tell"),
    ],
)
def test_the_account_check_fails_or_cannot_tell(session: Any, result: str, said: str) -> None:
    check = check_service_account(session, ACCOUNT)
    assert check.result == result and said in check.detail


def test_a_non_account_fails_before_any_call() -> None:
    session = _account({"permissions": [ACT_AS]})
    assert check_service_account(session, "me@example.com").result == "fail"
    assert not session.asked


def test_run_checks_asks_through_the_session_for_the_projects_service_agent(
    stack: LocalStack, bucket: str
) -> None:
    """The agents are the project's (its number from Resource Manager); both checks come last."""
    key = f"projects/p/locations/{stack.location}/keyRings/ring/cryptoKeys/key"
    agents = key_agents(stack.project_number)
    session = StandIn(
        {
            ("GET", f"{KMS_API}/{key}"): (200, {"name": key}),
            ("GET", f"{KMS_API}/{key}:getIamPolicy?options.requestedPolicyVersion=3"): (
                200,
                {"bindings": [_grant(KMS_ROLE, member=agent) for agent in agents]},
            ),
            ("GET", ACCOUNT_URL): (200, {}),
            ("POST", f"{ACCOUNT_URL}:testIamPermissions"): (200, {"permissions": [ACT_AS]}),
        }
    )
    env = stack.environment(bucket, prefix="jobs")
    checks = run_checks(env, {}, kms_key=key, service_account=ACCOUNT, session=session)
    assert [(c.check, c.result) for c in checks[-2:]] == [
        ("kms-key", "ok"),
        ("service-account", "ok"),
    ]
