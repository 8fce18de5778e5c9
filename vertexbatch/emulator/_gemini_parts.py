"""The local model's Gemini parts that are not plain text; the schema a request asks for (pure)."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

__all__ = ["gemini_part", "gemini_schema"]


def gemini_schema(config: Mapping[str, Any]) -> Any:
    """The response schema of a Gemini request asking for JSON, if it gives one."""
    mime = config.get("responseMimeType") or config.get("response_mime_type")
    if mime != "application/json":
        return None
    for name in ("responseSchema", "response_schema", "responseJsonSchema", "response_json_schema"):
        if config.get(name) is not None:
            return config[name]
    return None


def gemini_part(kind: str, thought: str, digest: str, words: int) -> dict[str, Any]:
    """A part of one of ``PART_KINDS`` that is not text (a thought is text, marked thought)."""
    if kind == "thought":
        return {"text": thought, "thought": True}
    if kind == "inline_data":
        png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes.fromhex(digest[:16]))
        return {"inlineData": {"mimeType": "image/png", "data": png.decode("ascii")}}
    if kind == "file_data":
        uri = f"gs://local-model/{digest[:16]}.png"
        return {"fileData": {"mimeType": "image/png", "fileUri": uri}}
    if kind == "executable_code":
        return {"executableCode": {"language": "PYTHON", "code": f"print({words})"}}
    return {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": f"{words}\n"}}
