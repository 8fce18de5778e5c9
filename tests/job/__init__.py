"""One job's protocol against the local stack: submit, find, results (vertexbatch/_job/)."""
