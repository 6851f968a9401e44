"""Pydantic models → OpenAI function-tool definitions, one source for the schema the model sees and the
validation its arguments go through.

Schemas are inlined (no ``$ref``/``$defs``: Gemini and several local servers reject them) and trimmed
of pydantic's ``title`` noise; the discriminator field (``action``) and fields the agent sets itself
are dropped, since the tool's name already says which action it is.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            target = defs[node["$ref"].rsplit("/", 1)[-1]]
            merged = {**copy.deepcopy(target), **{k: v for k, v in node.items() if k != "$ref"}}
            return _inline(merged, defs)
        return {k: _inline(v, defs) for k, v in node.items() if k not in ("title", "$defs")}
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node


def parameters_schema(model: type[BaseModel], drop: Iterable[str] = ()) -> dict[str, Any]:
    """The JSON schema of `model` as a tool's ``parameters``, refs inlined, `drop` fields removed."""
    schema = model.model_json_schema()
    out = _inline(schema, schema.get("$defs", {}))
    drop = set(drop)
    out["properties"] = {k: v for k, v in out.get("properties", {}).items() if k not in drop}
    required = [k for k in out.get("required", []) if k not in drop]
    if required:
        out["required"] = required
    else:
        out.pop("required", None)
    out.pop("description", None)
    out.setdefault("type", "object")
    return out


def function_tool(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }
