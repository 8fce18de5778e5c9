"""A BigQuery sink, ``bq://PROJECT.DATASET`` or ``bq://PROJECT.DATASET.TABLE``, checked (pure).

BigQuery's naming rules (docs: "Creating datasets", "Creating and using tables", "Creating and
managing projects"): a project id is 6 to 30 lowercase letters, digits and hyphens, starting
with a letter and not ending with a hyphen, optionally after ``DOMAIN:`` for a domain-scoped
project; a dataset name is 1 to 1,024 letters, digits and underscores; a table name is 1 to
1,024 UTF-8 bytes of letters, marks, numbers, connectors (``_``), dashes and spaces. A URI is
checked here before any cloud call; ``Dest`` names its parts.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from .._errors import InvalidRequestError

__all__ = ["SCHEME", "Dest", "check_dest", "parse_dest"]

SCHEME = "bq://"
_PROJECT = re.compile(r"[a-z][a-z0-9-]{4,28}[a-z0-9]")
_DOMAIN = re.compile(r"[a-z0-9](?:[a-z0-9.-]{0,61}[a-z0-9])?")
_DATASET = re.compile(r"[A-Za-z0-9_]{1,1024}")
_TABLE_CATEGORIES = ("L", "M", "N", "Pc", "Pd", "Zs")
_MAX_TABLE_BYTES = 1024


@dataclass(frozen=True, slots=True)
class Dest:
    """A checked sink: ``project`` (with its ``DOMAIN:`` if any), ``dataset``, ``table`` ("" when
    only a dataset is named: Vertex names a table per job)."""

    project: str
    dataset: str
    table: str = ""

    @property
    def uri(self) -> str:
        """The sink as given: ``bq://PROJECT.DATASET[.TABLE]``."""
        return self.dataset_uri + (f".{self.table}" if self.table else "")

    @property
    def dataset_uri(self) -> str:
        """``bq://PROJECT.DATASET``."""
        return f"{SCHEME}{self.project}.{self.dataset}"

    def table_uri(self, table: str) -> str:
        """``bq://PROJECT.DATASET.TABLE`` of a table in this sink's dataset."""
        return f"{self.dataset_uri}.{table}"

    @property
    def table_path(self) -> str:
        """The Storage Read API's name of the table: ``projects/P/datasets/D/tables/T``."""
        return f"projects/{self.project}/datasets/{self.dataset}/tables/{self.table}"


def _bad(uri: str, rule: str, field: str) -> InvalidRequestError:
    what = "sink" if field == "dest" else "table URI"  # a source's table is no sink
    return InvalidRequestError(f"{field} {uri!r} is not a BigQuery {what}: {rule}", field=field)


def _table_ok(table: str) -> bool:
    if len(table.encode()) > _MAX_TABLE_BYTES:
        return False
    return all(unicodedata.category(c).startswith(_TABLE_CATEGORIES) for c in table)


def parse_dest(uri: object, field: str = "dest") -> Dest:
    """The sink a ``bq://`` URI names, checked against BigQuery's rules.

    Raises:
        InvalidRequestError: not a string of that form, or a part that breaks its rule; the
            message names ``field`` and the rule.
    """
    if not isinstance(uri, str):
        raise InvalidRequestError(
            f"{field} must be a bq://PROJECT.DATASET or bq://PROJECT.DATASET.TABLE URI, "
            f"got {type(uri).__name__}",
            field=field,
        )
    if not uri.startswith(SCHEME):
        raise _bad(uri, "it must start with bq:// (bq://PROJECT.DATASET[.TABLE])", field)
    rest = uri[len(SCHEME) :]
    domain, colon, scoped = rest.rpartition(":")
    if colon and not _DOMAIN.fullmatch(domain):
        raise _bad(uri, "a domain-scoped project is DOMAIN:PROJECT, the domain a host name", field)
    parts = scoped.split(".")
    if len(parts) not in (2, 3):
        raise _bad(uri, "it must name a project and a dataset, and at most one table", field)
    project, dataset, table = parts[0], parts[1], parts[2] if len(parts) == 3 else ""
    if not _PROJECT.fullmatch(project):
        raise _bad(
            uri,
            f"project {project!r} must be 6 to 30 lowercase letters, digits and hyphens, "
            "starting with a letter and not ending with a hyphen",
            field,
        )
    if not _DATASET.fullmatch(dataset):
        raise _bad(
            uri, f"dataset {dataset!r} must be 1 to 1,024 letters, digits and underscores", field
        )
    if len(parts) == 3 and (not table or not _table_ok(table)):
        raise _bad(
            uri,
            f"table {table!r} must be 1 to 1,024 bytes of letters, marks, numbers, underscores, "
            "dashes and spaces",
            field,
        )
    return Dest(f"{domain}:{project}" if colon else project, dataset, table)


def check_dest(uri: object, field: str = "dest") -> str:
    """``uri`` checked (``parse_dest``), or "" for ``None`` (a GCS sink)."""
    if uri is None:
        return ""
    return parse_dest(uri, field).uri
