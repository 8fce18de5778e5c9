"""`python -m vertexbatch.emulator [--bucket NAME] [--row-seconds S]`: the stack."""

from __future__ import annotations

import argparse

from vertexbatch.emulator._foreground import run_foreground
from vertexbatch.emulator._options import Timing


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and run the stack until SIGINT or SIGTERM."""
    parser = argparse.ArgumentParser(
        prog="python -m vertexbatch.emulator",
        description="Run the local Vertex AI batch-prediction stack until Ctrl-C.",
    )
    parser.add_argument("--bucket", default="vertexbatch-local", help="bucket to create")
    parser.add_argument("--row-seconds", type=float, default=0.05, help="time each row takes")
    args = parser.parse_args(argv)
    run_foreground(bucket=args.bucket, timing=Timing(row_seconds=args.row_seconds))


if __name__ == "__main__":
    main()
