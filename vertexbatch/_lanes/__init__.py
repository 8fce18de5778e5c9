"""The ``Client`` methods of the lanes beyond Claude and Gemini chat, one module per lane.

Each module holds a mixin the ``Client`` inherits (``submit_<lane>``, ``plan_<lane>``,
``run_<lane>``): thin typed entry points over ``_operations``, as ``_client`` is for Claude and
Gemini. What differs by lane is the lane's row of the provider table (``_providers``), never a
switch here.
"""
