"""Request building and checking (vertexbatch/_requests/)."""
