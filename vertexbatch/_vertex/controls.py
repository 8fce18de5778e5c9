"""Job controls: a submission's own labels, CMEK key and service account, and their rules (pure).

Vertex's rules (docs/operations.md, "Job controls"; the wire reference, section 9c), checked
before any cloud call:

- ``labels``: at most 64 on a job, vertexbatch's own among them (``RESERVED_LABELS``, which a
  caller may not set); keys of 1-63 characters starting with a lowercase letter, values of 0-63,
  both of lowercase letters (international ones too), digits, ``_`` and ``-``.
- ``kms_key``: a Cloud KMS key's full resource name,
  ``projects/P/locations/L/keyRings/R/cryptoKeys/K``, in the job's location.
- ``service_account``: the email of a service account (``NAME@….gserviceaccount.com``).

``Controls`` is the checked value: staged in the manifest (and a run's ledger), put on the job,
compared when an id is submitted again and when a listed job is adopted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._errors import InvalidRequestError, shorten

__all__ = [
    "ID_LABEL",
    "MARK_LABEL",
    "MAX_LABELS",
    "NONCE_LABEL",
    "NO_CONTROLS",
    "RESERVED_LABELS",
    "RUN_LABEL",
    "Controls",
    "check_controls",
    "check_label",
]

# Labels on every job vertexbatch creates: one marks it as ours, one carries the submission id.
MARK_LABEL = "vertexbatch"
ID_LABEL = "vertexbatch_id"
# The label of one create attempt's own fresh value: a submit tells the job its lost create made.
NONCE_LABEL = "vertexbatch_nonce"
# The label a run puts on every attempt's job: the run's id, so one listing finds them all.
RUN_LABEL = "vertexbatch_run"
RESERVED_LABELS = frozenset({MARK_LABEL, ID_LABEL, NONCE_LABEL, RUN_LABEL})
# Vertex's limit for one job, vertexbatch's own labels counted: a caller's may be 64 less those.
MAX_LABELS = 64
_OWN_LABELS = len(RESERVED_LABELS)

_KMS_KEY = re.compile(
    r"projects/(?P<project>[^/\s]+)/locations/(?P<location>[^/\s]+)"
    r"/keyRings/[A-Za-z0-9_-]{1,63}/cryptoKeys/[A-Za-z0-9_-]{1,63}"
)
_SERVICE_ACCOUNT = re.compile(r"[a-z0-9][a-z0-9._-]{0,99}@[a-z0-9][a-z0-9.:-]*gserviceaccount\.com")
_QUOTE = 80  # characters of a bad value a message quotes
_NAME_MAX = 512  # characters of a key name or an account email (an email is at most 254)


def _label_text_ok(text: str, *, key: bool) -> bool:
    if len(text) > 63 or (key and not text):
        return False
    if key and not (text[0].isalpha() and text[0].islower()):
        return False
    return all(c.isdigit() or c in "_-" or (c.isalpha() and c == c.lower()) for c in text)


def check_label(key: object, value: object) -> None:
    """Raise ``InvalidRequestError`` unless ``key: value`` is a label a caller may set."""
    if not isinstance(key, str) or not isinstance(value, str):
        raise InvalidRequestError(
            f"labels must map strings to strings, got a {type(key).__name__} key and a "
            f"{type(value).__name__} value",
            field="labels",
        )
    if key in RESERVED_LABELS:
        raise InvalidRequestError(
            f"label {key!r} is vertexbatch's own (it sets {', '.join(sorted(RESERVED_LABELS))} "
            "itself): choose another key",
            field="labels",
        )
    if not _label_text_ok(key, key=True):
        raise InvalidRequestError(
            f"label key {shorten(repr(key), _QUOTE)} is invalid: a key is 1-63 characters of "
            "lowercase letters, digits, '_' or '-', starting with a lowercase letter",
            field="labels",
        )
    if not _label_text_ok(value, key=False):
        raise InvalidRequestError(
            f"the value of label {key!r} is invalid: a value is 0-63 characters of lowercase "
            "letters, digits, '_' or '-'",
            field="labels",
        )


@dataclass(frozen=True, slots=True)
class Controls:
    """A submission's job controls, checked (``check_controls``); empty by default.

    ``labels`` are sorted ``(key, value)`` pairs; ``kms_key`` and ``service_account`` are ``""``
    when not set.
    """

    labels: tuple[tuple[str, str], ...] = ()
    kms_key: str = ""
    service_account: str = ""

    @property
    def empty(self) -> bool:
        return not (self.labels or self.kms_key or self.service_account)

    def label_map(self) -> dict[str, str]:
        return dict(self.labels)

    def to_json(self) -> dict[str, Any]:
        """The controls as a record holds them: only those set."""
        data: dict[str, Any] = {}
        if self.labels:
            data["labels"] = self.label_map()
        if self.kms_key:
            data["kms_key"] = self.kms_key
        if self.service_account:
            data["service_account"] = self.service_account
        return data

    @classmethod
    def from_json(cls, data: Any) -> Controls:
        """The controls a record holds, every field checked.

        Raises:
            ValueError: the record's controls are not controls vertexbatch writes (the message
                says which field, never its value).
        """
        if not isinstance(data, dict):
            raise ValueError("'controls' is not an object")
        unknown = set(data) - {"labels", "kms_key", "service_account"}
        if unknown:
            raise ValueError(f"'controls' has unknown fields {sorted(unknown)}")
        labels = data.get("labels", {})
        kms_key = data.get("kms_key", "")
        account = data.get("service_account", "")
        if not isinstance(labels, dict) or not isinstance(kms_key, str):
            raise ValueError("'controls' labels are not an object or its kms_key not a string")
        if not isinstance(account, str):
            raise ValueError("'controls' service_account is not a string")
        try:
            checked = check_controls(
                labels or None, kms_key or None, account or None, location=None
            )
        except InvalidRequestError as exc:
            raise ValueError(f"'controls' {exc.field} break Vertex's rules") from None
        return checked

    def differs(self, other: Controls) -> str:
        """The name of the first control that differs from ``other``'s ("" if none does)."""
        for name in ("labels", "kms_key", "service_account"):
            if getattr(self, name) != getattr(other, name):
                return name
        return ""

    def difference(self, other: Controls) -> str:
        """What differs from ``other``'s, for a message: the key or account named, the labels
        never quoted (a cost centre is the caller's business)."""
        name = self.differs(other)
        if name == "labels":
            return "other labels"
        if not name:
            return "the same job controls"
        mine, theirs = getattr(self, name), getattr(other, name)
        return f"{name} {mine or 'unset'}, not {theirs or 'unset'}"


NO_CONTROLS = Controls()
"""A submission with no job controls of its own (every one before they existed)."""


def check_controls(
    labels: object, kms_key: object, service_account: object, *, location: str | None
) -> Controls:
    """The checked controls of a submission in ``location`` (``None``: any location, for a
    record read back); ``None`` for each one not set.

    Raises:
        InvalidRequestError: a control breaks Vertex's rules; ``field`` names it.
    """
    pairs: list[tuple[str, str]] = []
    if labels is not None:
        if not isinstance(labels, Mapping):
            raise InvalidRequestError(
                f"labels must be a mapping of strings to strings, got {type(labels).__name__}",
                field="labels",
            )
        for key, value in labels.items():
            check_label(key, value)
            pairs.append((key, value))
        if len(pairs) > MAX_LABELS - _OWN_LABELS:
            raise InvalidRequestError(
                f"{len(pairs)} labels is too many: Vertex allows {MAX_LABELS} on a job and "
                f"vertexbatch sets {_OWN_LABELS} of its own, so at most "
                f"{MAX_LABELS - _OWN_LABELS}",
                field="labels",
            )
    key = ""
    if kms_key is not None:
        fits = isinstance(kms_key, str) and len(kms_key) <= _NAME_MAX
        match = _KMS_KEY.fullmatch(kms_key) if isinstance(kms_key, str) and fits else None
        if match is None:
            raise InvalidRequestError(
                f"kms_key {shorten(repr(kms_key), _QUOTE)} is not a Cloud KMS key resource name "
                "(projects/P/locations/L/keyRings/R/cryptoKeys/K)",
                field="kms_key",
            )
        if location is not None and match.group("location") != location:
            raise InvalidRequestError(
                f"kms_key is in location {match.group('location')!r}, not the client's "
                f"{location!r}: Vertex takes a key in the job's own location",
                field="kms_key",
            )
        key = match.group(0)
    account = ""
    if service_account is not None:
        if not isinstance(service_account, str) or not _SERVICE_ACCOUNT.fullmatch(service_account):
            raise InvalidRequestError(
                f"service_account {shorten(repr(service_account), _QUOTE)} is not the email of "
                "a service account (NAME@PROJECT.iam.gserviceaccount.com)",
                field="service_account",
            )
        account = service_account
    return Controls(labels=tuple(sorted(pairs)), kms_key=key, service_account=account)
