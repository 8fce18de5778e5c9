"""Validation of ids, keys and models: clear errors naming the value and the rule."""

import pytest

from vertexbatch import InvalidRequestError
from vertexbatch._rules import (
    LANES,
    check_id,
    check_key,
    check_model,
    id_label,
    owner_of,
    publisher_path,
)


@pytest.mark.parametrize("good", ["a", "review-0a1b2c", "run.r1", "x_y", "9" * 63])
def test_valid_ids(good: str) -> None:
    """Ids of the documented form are accepted as they are."""
    assert check_id(good) == good


@pytest.mark.parametrize(
    "bad", ["", "A", "-a", ".a", "a/b", "a b", "é", "a" * 64, 7, None, "Review"]
)
def test_invalid_ids_name_the_value_and_rule(bad: object) -> None:
    """A bad id fails before any cloud call, naming the id and the allowed form."""
    with pytest.raises(InvalidRequestError) as info:
        check_id(bad)
    assert repr(bad) in str(info.value)
    assert "1-63 characters" in str(info.value)
    assert info.value.field == "id"


def test_id_label_is_a_valid_label_value() -> None:
    """Dots, which labels refuse, are spelled '_' in the id label."""
    assert id_label("run.r1") == "run_r1"


def test_keys_must_be_unique_non_empty_strings() -> None:
    """Duplicate, empty and non-string keys are each refused with the reason."""
    seen: set[str] = set()
    assert check_key("a", seen) == "a"
    with pytest.raises(InvalidRequestError, match="'a' appears twice"):
        check_key("a", seen)
    with pytest.raises(InvalidRequestError, match="must not be empty"):
        check_key("", seen)
    with pytest.raises(InvalidRequestError, match="must be a string, got int"):
        check_key(3, seen)


@pytest.mark.parametrize(
    ("model", "provider", "message"),
    [
        ("publishers/anthropic/models/claude-x", "anthropic", "bare Vertex model id"),
        ("projects/p/locations/l/publishers/google/models/gemini-x", "google", "bare"),
        ("gemini-3.8-flash", "anthropic", "submit_gemini"),
        ("claude-opus-5-5@default", "google", "submit_claude"),
        ("llama-3", "anthropic", "not a Claude model"),
        ("", "google", "non-empty"),
        ("gemini 3", "google", "not a Vertex model id"),
        ("gemini-embedding-001", "google", "submit_embeddings"),
        ("gemini-2.5-flash", "embeddings", "submit_gemini"),
        ("meta/llama-3.3-70b-instruct-maas", "google", "bare Vertex model id"),
        ("meta/llama-3.3-70b-instruct-maas", "embeddings", "bare Vertex model id"),
        ("llama-3.3-70b-instruct-maas", "openmaas", "must be PUBLISHER/MODEL"),
        ("gemini-embedding-001", "openmaas", "must be PUBLISHER/MODEL"),
        ("publishers/meta/models/llama-x", "openmaas", "must be PUBLISHER/MODEL"),
        # A publisher with a lane of its own is refused by the open-model lane, naming that lane.
        ("google/gemini-2.5-flash", "openmaas", r"submit_gemini\('gemini-2.5-flash'"),
        ("anthropic/claude-sonnet-4-5", "openmaas", r"submit_claude\('claude-sonnet-4-5'"),
        ("google/gemini-embedding-001", "openmaas", "submit_embeddings"),
        ("google/imagen-4", "openmaas", "lanes of their own"),
    ],
)
def test_bad_models(model: str, provider: str, message: str) -> None:
    """Prefixed, malformed and wrong-family models are refused with the rule."""
    with pytest.raises(InvalidRequestError, match=message):
        check_model(model, provider)  # type: ignore[arg-type]


def test_good_models() -> None:
    """Bare ids of the right family pass unchanged."""
    assert check_model("claude-opus-5-5@default", "anthropic") == "claude-opus-5-5@default"
    assert check_model("gemini-3.8-flash", "google") == "gemini-3.8-flash"


@pytest.mark.parametrize(
    ("model", "owner"),
    [
        ("claude-sonnet-4-5", "anthropic"),
        ("gemini-2.5-flash", "google"),
        ("gemini-embedding-001", "embeddings"),
        ("text-multilingual-embedding-002", "embeddings"),
        ("meta/llama-3.3-70b-instruct-maas", "openmaas"),
        ("qwen/qwen3-235b-a22b-instruct-2507-maas", "openmaas"),
        ("publishers/meta/models/llama-x", None),
        ("meta/", None),
        ("llama-3.3-70b-instruct-maas", None),
    ],
)
def test_one_rule_names_each_model_s_lane(model: str, owner: str | None) -> None:
    """``owner_of`` over ``LANES``: the longest prefix for a bare id (embedding ids are not
    Gemini chat's), the lane whose ids name their publisher for ``publisher/model``."""
    assert owner_of(model) == owner


def test_the_open_model_lane_has_no_publisher_of_its_own() -> None:
    """Its model ids name the publisher: the Vertex path is read from the id."""
    assert LANES["openmaas"].publisher is None
    assert check_model("meta/llama-3.3-70b-instruct-maas", "openmaas") == (
        "meta/llama-3.3-70b-instruct-maas"
    )
    assert publisher_path("meta/llama-x", "openmaas") == "publishers/meta/models/llama-x"
    assert publisher_path("gemini-embedding-001", "embeddings") == (
        "publishers/google/models/gemini-embedding-001"
    )
