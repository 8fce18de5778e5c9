"""Guard tests: the rules the code must keep (layers, sizes, __all__, signatures, seams)."""
