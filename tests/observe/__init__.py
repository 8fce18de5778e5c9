"""Progress, SDK logs and traces (vertexbatch/_observe/)."""
