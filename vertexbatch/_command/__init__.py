"""The ``vertexbatch`` command and its demo: click groups, option parsing, rendering.

The entry point is ``cli.main`` (reached through ``vertexbatch.__main__``, which guards the
``cli`` extra). Nothing in the library imports this package; it imports the library, the checks
(``vertexbatch._checks``) and the local stack.
"""
