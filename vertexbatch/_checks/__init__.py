"""Checks of a project before and after a submission: ``doctor`` (configuration, access, a run's
state) and ``probe`` (a tiny real batch that settles the wire facts a project's model serves).

Each check returns findings as values; the command (``vertexbatch._command``) renders them.
"""
