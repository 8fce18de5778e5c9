"""What Anthropic checks of a Claude request's custom tools, as the local model checks it (pure).

Two rules, each answered as the Messages API answers it (400 ``invalid_request_error``, the
message as the API writes it), never quoting the name:

- a tool's ``name`` matches ``^[a-zA-Z0-9_-]{1,128}$``: "tools.0.custom.name: String should
  match pattern ...". Anthropic's API reference documents ``{1,64}``; the API's own message has
  said ``{1,128}`` since 2025 (modelcontextprotocol/modelcontextprotocol#1345, 2025-08;
  nicobailon/pi-mcp-adapter#190, 2026-07), and the stack refuses what the API refuses;
- the keys of its ``input_schema.properties`` match ``^[a-zA-Z0-9_.-]{1,64}$``: "tools.0.custom
  .input_schema.properties: Property keys should match pattern ..." (anthropics/claude-code
  #79418, 2026-07, and others; the top level only, as the message says and
  aws-solutions-library-samples/accelerated-intelligent-document-processing-on-aws#709
  reports).

A tool with a ``type`` other than ``custom`` is a server tool (web search, bash, ...) and has
neither. The client holds ``schema=`` to the same rule in its own code
(``vertexbatch/_schemas/forms.py``): the stack shares none with it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["tool_problem"]

_NAME: Final = "^[a-zA-Z0-9_-]{1,128}$"
_PROPERTY: Final = "^[a-zA-Z0-9_.-]{1,64}$"
_NAME_OK: Final = re.compile(_NAME.strip("^$")).fullmatch
_PROPERTY_OK: Final = re.compile(_PROPERTY.strip("^$")).fullmatch


def tool_problem(tools: Any) -> str | None:
    """The message Anthropic refuses a request's ``tools`` with, or ``None``."""
    if not isinstance(tools, list):
        return None
    for index, tool in enumerate(tools):
        if not isinstance(tool, Mapping) or tool.get("type", "custom") != "custom":
            continue
        name = tool.get("name")
        if isinstance(name, str) and not _NAME_OK(name):
            return f"tools.{index}.custom.name: String should match pattern '{_NAME}'"
        schema = tool.get("input_schema")
        properties = schema.get("properties") if isinstance(schema, Mapping) else None
        if isinstance(properties, Mapping) and not all(
            isinstance(key, str) and _PROPERTY_OK(key) for key in properties
        ):
            return (
                f"tools.{index}.custom.input_schema.properties: Property keys should match "
                f"pattern '{_PROPERTY}'"
            )
    return None
