"""HTTP helpers every service shares."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """orjson straight into a Response: the services' bodies skip FastAPI's validation and encoder, which
    would cost more than the work behind most routes (the OpenAPI models still document them)."""
    return Response(orjson.dumps(data), status_code=status, media_type="application/json", headers=headers)
