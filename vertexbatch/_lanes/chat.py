"""The open-model lane's ``Client`` methods: ``submit_chat``, ``plan_chat``, ``run_chat``.

Managed open models on Vertex (Llama, Qwen, DeepSeek, gpt-oss, ...) take OpenAI
chat-completions bodies (``ChatRequest``) and answer in the OpenAI shape; the model id names its
publisher (``meta/llama-3.3-70b-instruct-maas``). Thin, as ``_client``'s Claude and Gemini
methods: each builds its options and calls ``_operations`` with the ``openmaas`` row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Unpack

from .._bigquery.source import ChatRequests
from .._observe.traces import traced
from .._operations import plan_with, run_with, submit
from .._plans.estimate import Plan
from .._runs.run import Run
from .._submission.options import PlanKeywords, RunKeywords, SubmitKeywords, SubmitOptions
from .._values import Job

if TYPE_CHECKING:
    from .._cloud import Cloud
    from .._observe.traces import Tracing

__all__ = ["ChatLane"]


def _tracing_of(client: ChatLane) -> Tracing:
    return client._cloud.tracing


class ChatLane:
    """The ``Client`` methods of open models (a mixin; ``Client`` gives ``_cloud``)."""

    if TYPE_CHECKING:

        @property
        def _cloud(self) -> Cloud: ...

    @traced("submit", _tracing_of)
    def submit_chat(
        self,
        id: str,
        model: str,
        requests: ChatRequests,
        **options: Unpack[SubmitKeywords],
    ) -> Job:
        """Submit open-model requests (``ChatRequest``) under ``id`` to ``model``
        (``PUBLISHER/MODEL``, e.g. ``meta/llama-3.3-70b-instruct-maas``); see
        ``submit_claude``. ``schema=`` is written as OpenAI's ``response_format``."""
        given = SubmitOptions.of("submit_chat", options)
        return submit(self._cloud, id, model, "openmaas", requests, given)

    @traced("plan", _tracing_of)
    def plan_chat(
        self,
        id: str,
        model: str,
        requests: ChatRequests,
        **options: Unpack[PlanKeywords],
    ) -> Plan:
        """What ``submit_chat`` would do; see ``plan_claude`` (``count_tokens=True`` is refused:
        no count-tokens call is documented for open models)."""
        return plan_with(self._cloud, "plan_chat", id, model, "openmaas", requests, options)

    @traced("run.start", _tracing_of)
    def run_chat(
        self,
        id: str,
        model: str,
        requests: ChatRequests,
        **options: Unpack[RunKeywords],
    ) -> Run:
        """Start (or rejoin) a run of open-model requests; see ``run_claude`` (no online
        fallback: the lane has none)."""
        return run_with(self._cloud, "run_chat", id, model, "openmaas", requests, options)
