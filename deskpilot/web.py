"""HTTP helpers every service shares."""

from __future__ import annotations

import json
from typing import Any

import orjson
from starlette.responses import Response


def dumps(data: Any) -> bytes:
    """orjson, or the standard library for what orjson refuses (integers beyond 64 bits, nesting deeper
    than 254): the API refuses such values at input, but what is already stored must always read."""
    try:
        return orjson.dumps(data)
    except orjson.JSONEncodeError:
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """orjson straight into a Response: the services' bodies skip FastAPI's validation and encoder, which
    would cost more than the work behind most routes (the OpenAPI models still document them)."""
    return Response(dumps(data), status_code=status, media_type="application/json", headers=headers)
