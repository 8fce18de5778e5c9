"""The ``vertexbatch`` command's entry point (and ``python -m vertexbatch``).

The command needs the ``cli`` extra (click). Without it, the command says how to install it,
in one line on stderr, and exits 2 (configuration), instead of a ``ModuleNotFoundError``
traceback; so this module imports nothing that needs click until it has found click.
"""

from __future__ import annotations

import sys

__all__ = ["main"]

INSTALL_HINT = (
    "vertexbatch: the command needs the cli extra, which is not installed; "
    "install it from a checkout of vertexbatch: pip install '.[cli]' "
    "(or 'WHEEL[cli]' for a wheel built from it)"
)


def main() -> None:
    """Run the ``vertexbatch`` command, or say how to install it."""
    try:
        import click  # noqa: F401  # only to know whether the extra is there
    except ImportError:
        print(INSTALL_HINT, file=sys.stderr)
        sys.exit(2)
    from ._command.cli import main as command

    command()


if __name__ == "__main__":
    main()
