"""The location catalogue: which locations the local service serves (thread-safe).

A call under `projects/{p}/locations/{l}/` naming a location the catalogue does not hold is
refused, 400 INVALID_ARGUMENT, before anything else happens: `us-centrl1` creates no job. The
default holds the regions google-cloud-aiplatform accepts (`aiplatform.constants.base.
SUPPORTED_REGIONS`, which includes `global`) and the multi-regions `us` and `eu` (some Gemini
models are served there); `LocalStack(locations=...)` adds to it and `vertexbatch emulator
--location NAME` too.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable

from vertexbatch.emulator._errors import ApiError

__all__ = ["DEFAULT_LOCATIONS", "Locations"]

DEFAULT_LOCATIONS: tuple[str, ...] = (
    *("africa-south1", "asia-east1", "asia-east2", "asia-northeast1", "asia-northeast2"),
    *("asia-northeast3", "asia-south1", "asia-south2", "asia-southeast1", "asia-southeast2"),
    *("australia-southeast1", "australia-southeast2", "europe-central2", "europe-north1"),
    *("europe-north2", "europe-southwest1", "europe-west1", "europe-west12", "europe-west2"),
    *("europe-west3", "europe-west4", "europe-west6", "europe-west8", "europe-west9"),
    *("global", "me-central1", "me-central2", "me-west1", "northamerica-northeast1"),
    *("northamerica-northeast2", "southamerica-east1", "southamerica-west1", "us-central1"),
    *("us-east1", "us-east4", "us-east5", "us-east7", "us-south1", "us-west1", "us-west2"),
    *("us-west3", "us-west4", "us-west8", "us", "eu"),
)
"""The default catalogue: google-cloud-aiplatform's SUPPORTED_REGIONS (2.7) plus `us`, `eu`."""

_NAME = re.compile(r"[a-z][a-z0-9-]{0,62}")


class Locations:
    """The locations one stack serves, and the error for any other."""

    def __init__(self, extra: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._names: set[str] = set(DEFAULT_LOCATIONS)
        for name in extra:
            self.add(name)

    def add(self, name: str) -> None:
        """Serve one more location (lowercase letters, digits and dashes, as Google's are).

        Raises:
            ValueError: not a location name.
        """
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ValueError(
                f"location {name!r} is not a location name (lowercase letters, digits and "
                "dashes, starting with a letter)"
            )
        with self._lock:
            self._names.add(name)

    def names(self) -> tuple[str, ...]:
        """Every location served, sorted."""
        with self._lock:
            return tuple(sorted(self._names))

    def check(self, location: str) -> None:
        """Raise the ApiError Vertex answers for a location it does not serve.

        The wording follows Vertex's field-violation messages ("List of found errors: … Field:
        parent; …"); the exact text for an unknown location is UNCONFIRMED.
        """
        with self._lock:
            known = location in self._names
        if not known:
            raise ApiError(
                400,
                "List of found errors:\t1.Field: parent; Message: The provided location ID "
                f"`{location[:100]}` is not a valid location.\t",
                "INVALID_ARGUMENT",
            )
