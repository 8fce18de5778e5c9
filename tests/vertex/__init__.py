"""The Vertex boundary: job controls (vertexbatch/_vertex/)."""
