"""Plans and prices (vertexbatch/_plans/)."""
