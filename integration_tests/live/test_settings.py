"""Which target the live suite picks from the environment."""

from __future__ import annotations

import pytest

from .conftest import LIVE, live_settings


def test_no_live_variable_means_the_local_stack() -> None:
    assert live_settings({}) is None


def test_all_three_name_the_live_project() -> None:
    env = dict(zip(LIVE, ("my-project", "us-east5", "my-bucket"), strict=True))
    assert live_settings(env) == env


def test_some_but_not_all_is_an_error_naming_the_missing() -> None:
    with pytest.raises(pytest.UsageError, match="VERTEXBATCH_LIVE_BUCKET"):
        live_settings({"VERTEXBATCH_LIVE_PROJECT": "p", "VERTEXBATCH_LIVE_LOCATION": "l"})
