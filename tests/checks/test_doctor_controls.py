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
    key_use,
)
from vertexbatch._checks.doctor_run import run_checks
from vertexbatch.emulator import LocalStack

KEY = "projects/p/locations/us-central1/keyRings/ring/cryptoKeys/key"
AGENT = "service-123@gcp-sa-aiplatform.iam.gserviceaccount.com"
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


def test_a_key_the_agent_may_use_is_ok() -> None:
    check = check_kms_key(_key({"bindings": [_grant(KMS_ROLE)]}), KEY, "us-central1", AGENT)
    assert check.result == "ok" and AGENT in check.detail


@pytest.mark.parametrize(
    ("session", "agent", "result", "said"),
    [
        (_key({}, key_status=404), AGENT, "fail", "does not exist"),
        (_key({}, key_status=403), AGENT, "warn", "cannot tell"),
        (_key({"bindings": []}), AGENT, "warn", "not on the key itself"),
        (
            _key({"bindings": [_grant(KMS_ROLE, condition={"expression": "x"})]}),
            AGENT,
            "warn",
            "only under a condition",
        ),
        (_key(None, policy_status=403), AGENT, "warn", "cannot tell"),
        (_key({"bindings": [_grant(KMS_ROLE)]}), None, "warn", "cannot tell"),
        (StandIn({("GET", f"{KMS_API}/{KEY}"): ConnectionError("down")}), AGENT, "warn", "cannot"),
        (None, AGENT, "warn", "cannot tell"),
    ],
)
def test_what_the_key_check_cannot_see_it_says_never_guessing(
    session: Any, agent: str | None, result: str, said: str
) -> None:
    check = check_kms_key(session, KEY, "us-central1", agent)
    assert (check.result, check.check) == (result, "kms-key")
    assert said in check.detail


def test_a_key_of_another_region_fails_before_any_call() -> None:
    session = _key({"bindings": [_grant(KMS_ROLE)]})
    check = check_kms_key(session, KEY, "europe-west4", AGENT)
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
    """The agent is the project's (its number from Resource Manager); both checks come last."""
    key = f"projects/p/locations/{stack.location}/keyRings/ring/cryptoKeys/key"
    agent = f"service-{stack.project_number}@gcp-sa-aiplatform.iam.gserviceaccount.com"
    session = StandIn(
        {
            ("GET", f"{KMS_API}/{key}"): (200, {"name": key}),
            ("GET", f"{KMS_API}/{key}:getIamPolicy?options.requestedPolicyVersion=3"): (
                200,
                {"bindings": [_grant(KMS_ROLE, member=agent)]},
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
