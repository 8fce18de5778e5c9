"""The warning a submission gives for a model the catalogue does not hold (pure).

New models reach Vertex before any table knows them, so an id outside the catalogue is still
submitted; the warning says so once per submission and names the nearest catalogued id, which is
often the id meant (a typo) and otherwise says what the catalogue does hold.
"""

from __future__ import annotations

import warnings

from .entries import closest, model_entry

__all__ = ["UncataloguedModelWarning", "uncatalogued", "warn_uncatalogued"]


class UncataloguedModelWarning(UserWarning):
    """A model id the catalogue (``vertexbatch models``) does not hold: it is submitted all the
    same, with no price, location or batch fact to check it against."""


def uncatalogued(model: str) -> str | None:
    """The warning's words for ``model``, ``None`` when the catalogue holds it."""
    if model_entry(model) is not None:
        return None
    near = closest(model)
    hint = f"the closest catalogued id is {near!r}" if near else "no catalogued id is close"
    return (
        f"model {model!r} is not in vertexbatch's model catalogue: it is submitted as given, "
        f"with no price or location to check ({hint}; `vertexbatch models` lists them)"
    )


def warn_uncatalogued(model: str) -> None:
    """Warn (``UncataloguedModelWarning``) when the catalogue does not hold ``model``."""
    said = uncatalogued(model)
    if said is not None:
        warnings.warn(said, UncataloguedModelWarning, stacklevel=3)
