"""One measurement in a fresh interpreter: ``python -m MODULE '<json spec>'``, whose last
``RESULT <json>`` line is the figures (``benchmarks.measure``, ``benchmarks.cold_child``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def run_child(module: str, spec: dict[str, Any], what: str) -> dict[str, Any]:
    """The figures ``module`` prints for ``spec``; ``what`` names it in the error of a failed
    child (with the tail of its stderr)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    proc = subprocess.run(
        [sys.executable, "-m", module, json.dumps(spec)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    found = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not found:
        raise RuntimeError(
            f"{what} {spec['op']} (N={spec.get('n')}) failed with exit code "
            f"{proc.returncode}:\n{proc.stderr[-4000:]}"
        )
    result: dict[str, Any] = json.loads(found[-1][len("RESULT ") :])
    return result
