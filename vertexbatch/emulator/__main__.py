"""`python -m vertexbatch.emulator [--bucket NAME] [--row-seconds S] [--port N] [--gcs-port N]
[--env-file PATH] [--probe-report PATH] [--bigquery] [--location NAME ...] [--model P/M ...]
[--state-dir DIR]`:
the stack, as `vertexbatch emulator` runs it."""

from __future__ import annotations

import argparse

from vertexbatch.emulator._foreground import run_foreground
from vertexbatch.emulator._options import Timing


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and run the stack until SIGINT, SIGTERM or SIGHUP."""
    parser = argparse.ArgumentParser(
        prog="python -m vertexbatch.emulator",
        description="Run the local Vertex AI batch-prediction stack until Ctrl-C or SIGTERM.",
    )
    parser.add_argument("--bucket", default="vertexbatch-local", help="bucket to create")
    parser.add_argument("--row-seconds", type=float, default=0.05, help="time each row takes")
    parser.add_argument("--port", type=int, default=0, help="Vertex service port (0: a free one)")
    parser.add_argument(
        "--gcs-port", type=int, default=0, help="fake-gcs-server port (0: a free one)"
    )
    parser.add_argument(
        "--env-file",
        help="write the export lines here once serving (removed on stop); source it",
    )
    parser.add_argument(
        "--probe-report", help="behave as this `vertexbatch probe` report says the service did"
    )
    parser.add_argument(
        "--bigquery",
        action="store_true",
        help="also run BigQuery (bqemulator; needs the bigquery-local extra: "
        "pip install '.[bigquery-local]' in a checkout)",
    )
    parser.add_argument(
        "--location",
        action="append",
        default=[],
        metavar="NAME",
        help="also serve this location (repeatable; the default catalogue is DEFAULT_LOCATIONS)",
    )
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="PUBLISHER/MODEL",
        help="also serve this model, e.g. google/gemini-3.5-flash (repeatable; the default "
        "catalogue is DEFAULT_MODELS and vertexbatch's model catalogue)",
    )
    parser.add_argument(
        "--state-dir",
        metavar="DIR",
        help="keep jobs and GCS objects in DIR across restarts (default: in memory, gone when "
        "the stack stops; a job still running at stop ends FAILED on the next start)",
    )
    args = parser.parse_args(argv)
    try:
        run_foreground(
            bucket=args.bucket,
            timing=Timing(row_seconds=args.row_seconds),
            port=args.port,
            gcs_port=args.gcs_port,
            env_file=args.env_file,
            probe_report=args.probe_report,
            bigquery=args.bigquery,
            locations=args.location,
            state_dir=args.state_dir,
            models=args.model,
        )
    except (OSError, ValueError, RuntimeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        parser.exit(2, f"{parser.prog}: cannot start the local stack: {reason}\n")


if __name__ == "__main__":
    main()
