"""The model catalogue: every model vertexbatch knows, as data (``models.toml``), each fact with
its source and the date it was read (pure; the file is parsed once, when first asked).

``model_entry(model)`` answers for a model id as callers write it (bare, ``@version`` or not);
``closest(model)`` names the nearest catalogued id for a warning or an error.

Imports: ``_errors``.
"""

from __future__ import annotations

from .entries import CATALOGUE_FILE, Model, Rates, Source, catalogue, closest, model_entry

__all__ = ["CATALOGUE_FILE", "Model", "Rates", "Source", "catalogue", "closest", "model_entry"]
