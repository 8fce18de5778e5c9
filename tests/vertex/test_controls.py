"""The job controls' rules (labels, CMEK key, service account) and their records, as pure logic."""

from __future__ import annotations

import pickle
from dataclasses import replace
from typing import Any

import pytest

import vertexbatch as vb
from vertexbatch._runs.ledger import Ledger, Shard
from vertexbatch._staged.manifest import Manifest, claim_conflict
from vertexbatch._vertex.controls import (
    NO_CONTROLS,
    RESERVED_LABELS,
    Controls,
    check_controls,
)

KEY = "projects/p/locations/us-central1/keyRings/ring/cryptoKeys/key-1"
ACCOUNT = "runner@p.iam.gserviceaccount.com"
SECRET = "topsecretvalue"


@pytest.mark.parametrize(
    "labels",
    [
        {"team": "search"},
        {"cost-center": "", "env": "prod_1"},
        {"a" * 63: "b" * 63},
        {"équipe": "données"},  # international lowercase letters are allowed
        {f"k{i}": "v" for i in range(60)},  # 64 less vertexbatch's own four
    ],
)
def test_labels_vertex_takes_are_taken_sorted(labels: dict[str, str]) -> None:
    """Labels within Vertex's rules are kept, as sorted pairs."""
    controls = check_controls(labels, None, None, location="us-central1")
    assert controls.labels == tuple(sorted(labels.items()))


@pytest.mark.parametrize(
    ("labels", "rule"),
    [
        ({"": "x"}, "1-63 characters"),
        ({"Team": "x"}, "starting with a lowercase letter"),
        ({"1team": "x"}, "starting with a lowercase letter"),
        ({"a" * 64: "x"}, "1-63 characters"),
        ({"team": "A"}, "0-63 characters of lowercase"),
        ({"team": "x" * 64}, "0-63 characters"),
        ({"team": "a.b"}, "0-63 characters"),
        ({"team": 1}, "map strings to strings"),
        ({f"k{i}": "v" for i in range(61)}, "at most 60"),
        (["team"], "must be a mapping"),
        ("team=x", "must be a mapping"),
        *(({name: "x"}, "vertexbatch's own") for name in sorted(RESERVED_LABELS)),
    ],
)
def test_labels_breaking_a_rule_are_refused_naming_it(labels: Any, rule: str) -> None:
    """Each label rule is its own message, field ``labels``."""
    with pytest.raises(vb.InvalidRequestError, match=rule) as caught:
        check_controls(labels, None, None, location="us-central1")
    assert caught.value.field == "labels"


def test_a_bad_label_value_is_never_quoted() -> None:
    """A label's value may be the caller's business: a refusal names the key, not the value."""
    with pytest.raises(vb.InvalidRequestError) as caught:
        check_controls({"team": SECRET.upper()}, None, None, location="us-central1")
    assert SECRET.upper() not in str(caught.value)


@pytest.mark.parametrize(
    ("key", "rule"),
    [
        ("key-1", "not a Cloud KMS key resource name"),
        (KEY + "/cryptoKeyVersions/1", "not a Cloud KMS key resource name"),
        ("projects/p/locations/us-central1/keyRings/ring", "not a Cloud KMS key resource name"),
        ("projects/p/locations/europe-west4/keyRings/r/cryptoKeys/k", "not the client's"),
        (7, "not a Cloud KMS key resource name"),
        ("x" * 500, "not a Cloud KMS key resource name"),
    ],
)
def test_a_kms_key_must_be_a_key_of_the_clients_location(key: Any, rule: str) -> None:
    """A key is ``projects/P/locations/L/keyRings/R/cryptoKeys/K`` with L the client's."""
    with pytest.raises(vb.InvalidRequestError, match=rule) as caught:
        check_controls(None, key, None, location="us-central1")
    assert caught.value.field == "kms_key"
    assert len(str(caught.value)) < 300  # a long value is quoted shortened


@pytest.mark.parametrize(
    "account",
    [
        ACCOUNT,
        "my-project@appspot.gserviceaccount.com",
        "123456789-compute@developer.gserviceaccount.com",
    ],
)
def test_service_account_emails_are_taken(account: str) -> None:
    assert check_controls(None, None, account, location="x").service_account == account


@pytest.mark.parametrize(
    "account", ["runner", "runner@example.com", "Runner@p.iam.gserviceaccount.com", "", 3]
)
def test_anything_but_a_service_account_email_is_refused(account: Any) -> None:
    with pytest.raises(vb.InvalidRequestError, match="not the email of a service account") as c:
        check_controls(None, None, account, location="x")
    assert c.value.field == "service_account"


def test_controls_round_trip_through_their_record() -> None:
    controls = check_controls({"b": "2", "a": "1"}, KEY, ACCOUNT, location="us-central1")
    assert controls.to_json() == {
        "labels": {"a": "1", "b": "2"},
        "kms_key": KEY,
        "service_account": ACCOUNT,
    }
    assert Controls.from_json(controls.to_json()) == controls
    assert NO_CONTROLS.to_json() == {} and NO_CONTROLS.empty


def _manifest(**changes: Any) -> Manifest:
    base = Manifest(provider="anthropic", model="claude-x", rows=2, bytes=10, md5="0" * 32)
    return replace(base, **changes)


def test_a_manifest_without_controls_is_written_as_before() -> None:
    """Old manifests read the same: ``controls`` is written only when some are set."""
    assert "controls" not in _manifest().to_json()
    assert Manifest.from_json(_manifest().to_json(), "m") == _manifest()


def test_a_manifest_with_controls_round_trips() -> None:
    controls = check_controls({"team": "x"}, KEY, ACCOUNT, location="us-central1")
    manifest = _manifest(controls=controls)
    assert manifest.to_json()["controls"] == controls.to_json()
    assert Manifest.from_json(manifest.to_json(), "m") == manifest


@pytest.mark.parametrize(
    "damaged",
    [
        [],
        {},
        {"labels": {"Team": "x"}},
        {"labels": {"vertexbatch_id": "x"}},
        {"kms_key": "k"},
        {"service_account": 1},
        {"owner": "me"},
    ],
)
def test_a_manifest_with_damaged_controls_is_refused_naming_it(damaged: Any) -> None:
    data = {**_manifest().to_json(), "controls": damaged}
    with pytest.raises(vb.InvalidRequestError, match="gs://b/m is not a vertexbatch manifest"):
        Manifest.from_json(data, "gs://b/m")


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (Controls(labels=(("team", "y"),)), "other labels"),
        (Controls(labels=(("team", "x"),), kms_key=KEY), f"kms_key unset, not {KEY}"),
        (Controls(labels=(("team", "x"),), service_account=ACCOUNT), "service_account unset"),
    ],
)
def test_the_same_rows_with_other_controls_claim_nothing_and_say_which(
    given: Controls, said: str
) -> None:
    """Other controls are other rows (``claims_same``); the refusal names the control, and
    never a label's value."""
    staged = _manifest(controls=Controls(labels=(("team", "x"),)))
    offered = _manifest(controls=given)
    assert not staged.claims_same(offered)
    message = str(claim_conflict("id-1", staged, offered))
    assert said in message
    assert "'x'" not in message and "'y'" not in message


def test_a_ledger_records_its_controls_only_when_set() -> None:
    shards = (Shard("r.s0", 2),)
    plain = Ledger("r", "google", "gemini-x", 3, shards, True)
    assert "controls" not in plain.to_json()
    controls = check_controls({"team": "x"}, KEY, None, location="us-central1")
    ledger = replace(plain, controls=controls)
    assert Ledger.from_json(ledger.to_json(), "r", "gs://b/r/run.json") == ledger
    with pytest.raises(vb.InvalidRequestError, match="not a vertexbatch run ledger"):
        Ledger.from_json({**plain.to_json(), "controls": {"kms_key": "x"}}, "r", "w")


def test_controls_errors_pickle() -> None:
    with pytest.raises(vb.InvalidRequestError) as caught:
        check_controls(None, "bad", None, location="x")
    assert pickle.loads(pickle.dumps(caught.value)).field == "kms_key"


def test_a_runs_ledger_size_counts_its_controls() -> None:
    """The largest controls (60 labels JSON escapes as surrogate pairs, a key and an account at
    their longest) are counted in the size a run's ledger is held to, exactly."""
    import json

    from vertexbatch._runs.ledger import ledger_size

    letter = "\U0001d44e"  # MATHEMATICAL ITALIC SMALL A: a lowercase letter outside the BMP
    labels = {f"{letter * 61}{i:02d}": letter * 63 for i in range(60)}
    key = f"projects/{'p' * 380}/locations/us-central1/keyRings/{'r' * 63}/cryptoKeys/k"
    account = f"{'a' * 100}@{'b' * 370}.iam.gserviceaccount.com"
    controls = check_controls(labels, key, account, location="us-central1")
    shards = tuple(Shard(f"r.s{i}", 5) for i in range(12))
    ledger = Ledger("r", "google", "gemini-x", 3, shards, True, controls)
    written = json.dumps(ledger.to_json(), sort_keys=True, indent=1).encode()
    assert ledger_size("r", "google", "gemini-x", 3, 12, 5, controls) == len(written)
    assert len(written) > 90_000  # the controls take their room
    with pytest.raises(vb.InvalidRequestError, match="kms_key"):
        check_controls(None, key.replace("p" * 380, "p" * 500), None, location="us-central1")
