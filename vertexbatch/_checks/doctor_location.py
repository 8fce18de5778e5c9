"""``vertexbatch doctor``'s ``location`` check: the location's form, and the models' catalogue rows.

Three kinds of location (``_hosts``): a region (``us-east5``), a multi-region (``us``, ``eu``,
served at ``aiplatform.{us|eu}.rep.googleapis.com``) and ``global``. Then, for each model named
with ``--model``, what the model catalogue says of that location:

    fail   a batch job there would be refused before any call (``_providers.
           batch_location_refusal``: ``global`` for a model not served there, or for Claude)
    warn   the catalogue holds the model and does not list the location (it may be incomplete:
           Vertex is the judge); a multi-region, where Google states nowhere whether batch jobs
           run (``vertexbatch probe --multi-region`` creates one to find out); a region outside
           Google's Generative AI list
    ok     a listed region, with every catalogued model listed there

A model the catalogue does not hold gets no verdict here (the ``model`` check looks it up).
Without ``--model`` only the form and, for ``global``, the families of ``DEFAULT_MODELS`` are
checked, as before the catalogue.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .._catalogue import model_entry
from .._config import Config
from .._hosts import GLOBAL, is_multi_region, vertex_host
from .._providers import PROVIDERS, batch_location_refusal, of_model, served_in
from .doctor import Check
from .doctor_rules import GENAI_REGIONS, GENAI_REGIONS_SOURCE

__all__ = ["REGION_NAME", "check_location"]

REGION_NAME = re.compile(r"[a-z]+-[a-z]+\d+")
"""A Google Cloud region name's form: us-east5, europe-west4, northamerica-northeast1."""
FIX = "set --location (or GOOGLE_CLOUD_LOCATION) to a region such as us-east5."


def check_location(
    config: Config, model: str | None = None, *, models: Sequence[str] = ()
) -> Check:
    """The location's form, and what the catalogue says of it for ``models`` (``--model``).

    ``model``: a model of the one family every model checked is of (``None``: several), by
    whose provider's row ``global`` is judged; ``models``: the models given with ``--model``,
    each judged against its catalogue row.
    """
    location = config.location
    form = _form(location, model)
    if form.result == "fail" or not models:
        return form
    refusals: list[str] = []
    unlisted: list[str] = []
    for name in models:
        row = of_model(name)
        if row is None:
            continue  # neither family: the model check says so
        entry = model_entry(name)
        why = batch_location_refusal(row, entry, name, location)
        if why is not None:
            refusals.append(why)
        elif entry is not None and location not in entry.locations:
            unlisted.append(f"{name} ({served_in(entry)})")
    if refusals:
        return Check("location", "fail", f"{'; '.join(refusals)}: {FIX}")
    if unlisted:
        return Check(
            "location",
            "warn",
            f"the model catalogue does not list {location} for {'; '.join(unlisted)}: choose "
            "a listed location, or submit to let Vertex say (the catalogue may lag Google's "
            "pages).",
        )
    return form


def _form(location: str, model: str | None) -> Check:
    """The location's kind: a listed region (ok), another region name or a multi-region (warn),
    ``global`` (by the family of ``model``), anything else (fail)."""
    if location == GLOBAL:
        row = of_model(model)
        if row is not None and row.global_batch:
            return Check("location", "ok", f"global ({row.title} batch runs there)")
        if row is not None:
            return Check("location", "fail", f"{row.title} batch needs a regional location: {FIX}")
        regional = " or ".join(r.title for r in PROVIDERS.values() if not r.global_batch)
        return Check("location", "warn", f"global cannot run {regional} batch jobs: {FIX}")
    if is_multi_region(location):
        return Check(
            "location",
            "warn",
            f"{location} is a multi-region, served at {vertex_host(location)}; Google does not "
            f"say whether batch jobs run there: 'vertexbatch probe --multi-region {location}' "
            "creates one to find out.",
        )
    if location in GENAI_REGIONS:
        return Check("location", "ok", f"{location} is a region Generative AI is offered in")
    if REGION_NAME.fullmatch(location):
        return Check(
            "location",
            "warn",
            f"{location} is not among the regions in {GENAI_REGIONS_SOURCE}: check that "
            "it serves your model, or choose a listed region such as us-east5.",
        )
    return Check(
        "location",
        "fail",
        f"location {location!r} is not a region name (lowercase letters, a hyphen, letters "
        f"and digits, such as us-east5 or europe-west4), a multi-region (us, eu) nor 'global': "
        f"{FIX}",
    )
