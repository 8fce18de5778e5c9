"""The model catalogue: every model vertexbatch knows, as data (``models.toml``), each fact with
its source and the date it was read (pure; the file is parsed once, when first asked).

``model_entry(model)`` answers for a model id as callers write it (bare, ``@version`` or not);
``closest(model)`` names the nearest catalogued id for a warning or an error;
``catalogue_from(path)`` reads a catalogue file of the same form; within ``catalogue_of(rows)``
the catalogue is those rows (a test's own, or a file's): the seam every reader goes through.
``warn_uncatalogued(model)`` gives the ``UncataloguedModelWarning`` a submission gives for an id
the catalogue does not hold.

Imports: ``_errors``.
"""

from __future__ import annotations

from .entries import (
    BAND_FIELDS,
    CATALOGUE_FILE,
    Band,
    Model,
    Rates,
    Source,
    bare_id,
    catalogue,
    catalogue_from,
    catalogue_of,
    closest,
    model_entry,
)
from .warning import UncataloguedModelWarning, uncatalogued, warn_uncatalogued

__all__ = [
    "BAND_FIELDS",
    "CATALOGUE_FILE",
    "Band",
    "Model",
    "Rates",
    "Source",
    "UncataloguedModelWarning",
    "bare_id",
    "catalogue",
    "catalogue_from",
    "catalogue_of",
    "closest",
    "model_entry",
    "uncatalogued",
    "warn_uncatalogued",
]
