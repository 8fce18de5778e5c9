"""Developer tools for the repository (not part of the vertexbatch package)."""
