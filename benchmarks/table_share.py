"""What a task of N is sent of a BigQuery table: ``python -m benchmarks.table_share --n 30000``.

A table of N Claude requests (a 400-character prompt each) on the local stack's BigQuery, read
through the Storage Read API as a one-process run reads it (two columns, one stream), once
whole and once per task as its share (the row restriction ``_bigquery.share`` gives). Prints
each read's rows, Arrow bytes and seconds: the rows and bytes say what a client-side filter
(every task reading the whole table and dropping the rest) would cost instead; the seconds are
the local stack's (bqemulator evaluates ``FARM_FINGERPRINT`` row by row; BigQuery's are not
measured here).
"""

from __future__ import annotations

import argparse
import io
import json
import time


def main(argv: list[str] | None = None) -> int:
    from google.cloud import bigquery
    from google.cloud.bigquery_storage_v1 import types

    from vertexbatch._bigquery.share import share_restriction
    from vertexbatch.emulator import LocalStack

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=30_000)
    parser.add_argument("--tasks", type=int, default=3)
    args = parser.parse_args(argv)
    with LocalStack(bigquery=True) as stack:
        client = stack.bigquery_client()
        made = bigquery.Dataset(f"{stack.project}.bench")
        made.location = stack.location
        client.create_dataset(made)
        schema = [
            bigquery.SchemaField("custom_id", "STRING"),
            bigquery.SchemaField("request", "JSON"),
        ]
        table = f"{stack.project}.bench.requests"
        client.create_table(bigquery.Table(table, schema))
        body = {"max_tokens": 64, "messages": [{"role": "user", "content": "x" * 400}]}
        rows = (json.dumps({"custom_id": f"key-{i}", "request": body}) for i in range(args.n))
        data = "".join(row + "\n" for row in rows).encode()
        config = bigquery.LoadJobConfig(schema=schema, source_format="NEWLINE_DELIMITED_JSON")
        client.load_table_from_file(io.BytesIO(data), table, job_config=config).result()
        read_client = stack.bigquery_read_client()

        def read(restriction: str) -> tuple[int, int, float]:
            start = time.perf_counter()
            options = types.ReadSession.TableReadOptions(
                selected_fields=["custom_id", "request"], row_restriction=restriction
            )
            session = read_client.create_read_session(
                parent=f"projects/{stack.project}",
                read_session=types.ReadSession(
                    table=f"projects/{stack.project}/datasets/bench/tables/requests",
                    data_format=types.DataFormat.ARROW,
                    read_options=options,
                ),
                max_stream_count=1,
            )
            count = size = 0
            for stream in session.streams:
                for page in read_client.read_rows(stream.name).rows(session).pages:
                    batch = page.to_arrow()
                    count, size = count + batch.num_rows, size + batch.nbytes
            return count, size, time.perf_counter() - start

        read("")  # warm
        whole = read("")
        print(f"whole table: {whole[0]} rows, {whole[1] / 1e6:.1f} MB Arrow, {whole[2]:.2f} s")
        for index in range(args.tasks):
            got = read(share_restriction("custom_id", index, args.tasks))
            print(
                f"task {index} of {args.tasks}'s share: {got[0]} rows, {got[1] / 1e6:.1f} MB, "
                f"{got[2]:.2f} s"
            )
        print(
            f"a client-side filter: every task sent all {whole[0]} rows "
            f"({args.tasks * whole[1] / 1e6:.1f} MB over {args.tasks} tasks)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
