"""One measurement in a fresh interpreter: ``python -m MODULE '<json spec>'``, whose last
``RESULT <json>`` line is the figures (``benchmarks.measure``, ``benchmarks.cold_child``); or, for
a smoke run, several measurements in one long-lived child (``Served``: ``python -m MODULE
--serve`` reads a spec a line and answers ``RESULT <json>`` a line)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def run_child(module: str, spec: dict[str, Any], what: str) -> dict[str, Any]:
    """The figures ``module`` prints for ``spec``; ``what`` names it in the error of a failed
    child (with the tail of its stderr)."""
    proc = subprocess.run(
        [sys.executable, "-m", module, json.dumps(spec)],
        cwd=ROOT,
        env=_env(),
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


class Served:
    """One long-lived ``python -m MODULE --serve`` child that measures spec after spec (a smoke
    run's: the interpreter and the imports paid once, no figure after the first meaningful).
    ``close()`` ends it; a failed measurement raises with the tail of its stderr."""

    def __init__(self, module: str, what: str) -> None:
        self.what = what
        self._errors: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        self._proc = subprocess.Popen(
            [sys.executable, "-m", module, "--serve"],
            cwd=ROOT,
            env=_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._errors,
            text=True,
        )

    def __call__(self, spec: dict[str, Any]) -> dict[str, Any]:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        try:
            self._proc.stdin.write(json.dumps(spec) + "\n")
            self._proc.stdin.flush()
        except BrokenPipeError:
            pass  # it died: reported below, with its stderr
        line = self._proc.stdout.readline()
        while line and not line.startswith("RESULT "):
            line = self._proc.stdout.readline()  # what the measured code printed
        if not line:
            self._proc.wait(timeout=60)
            self._errors.seek(0)
            raise RuntimeError(
                f"{self.what} {spec['op']} (N={spec.get('n')}) failed with exit code "
                f"{self._proc.returncode}:\n{self._errors.read().decode()[-4000:]}"
            )
        result: dict[str, Any] = json.loads(line[len("RESULT ") :])
        return result

    def close(self) -> None:
        """End the child (its stdin closed: it exits) and wait for it."""
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        finally:
            if self._proc.stdout is not None:
                self._proc.stdout.close()
            self._errors.close()
