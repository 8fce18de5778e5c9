"""One module builds Vertex AI hosts: ``vertexbatch/_hosts.py`` (``vertex_host``).

Every string literal of the package (f-string parts too; docstrings, which describe hosts, are
left out) is read with ``ast``: one naming an ``aiplatform`` host on ``googleapis.com``
(``{region}-aiplatform.googleapis.com``, ``aiplatform.googleapis.com``,
``aiplatform.us.rep.googleapis.com``) outside ``_hosts.py`` fails, naming its file:line. A full
resource name (``//aiplatform.googleapis.com/projects/...``, as an IAM error quotes it) names
no host to call and passes.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "vertexbatch"
HOSTS_MODULE = PACKAGE / "_hosts.py"
# A host: "aiplatform" (or "-aiplatform") then an optional ".us.rep", then ".googleapis.com".
HOST = re.compile(r"aiplatform(\.[a-z0-9-]+\.rep)?\.googleapis\.com")


def names_a_host(text: str) -> bool:
    """Whether ``text`` names a Vertex AI host; ``//aiplatform.googleapis.com/...`` with no
    scheme before it is a full resource name's service prefix, not a host."""
    for match in HOST.finditer(text):
        before = text[: match.start()]
        if not (before.endswith("//") and not before.endswith("://")):
            return True
    return False


def _docstrings(tree: ast.Module) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def host_literals(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of each string literal in ``path`` that names a Vertex AI host."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    docstrings = _docstrings(tree)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and names_a_host(node.value)
        ):
            yield node.lineno, node.value


def test_only_the_hosts_module_builds_a_vertex_host() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {text!r}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != HOSTS_MODULE
        for line, text in host_literals(path)
    ]
    assert not offenders, (
        "a Vertex AI host is built outside vertexbatch/_hosts.py (call vertex_host(location)): "
        + "; ".join(offenders)
    )


def test_the_guard_sees_each_form_of_host(tmp_path: Path) -> None:
    """The guard is not blind: each way a host was built before (an f-string's part, a plain
    literal, a multi-region host) is found; a docstring and a resource name are not."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        '"""Hosts such as us-east5-aiplatform.googleapis.com are described here."""\n'
        'a = f"{location}-aiplatform.googleapis.com"\n'
        'b = "aiplatform.googleapis.com"\n'
        'c = "https://aiplatform.eu.rep.googleapis.com/v1"\n'
        'd = f"//aiplatform.googleapis.com/projects/{p}"\n',
        encoding="utf-8",
    )
    assert sorted(line for line, _ in host_literals(sample)) == [2, 3, 4]
