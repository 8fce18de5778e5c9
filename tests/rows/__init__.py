"""One output row into one Result (vertexbatch/_rows/)."""
