"""A task's steps as the task page shows them: the trajectory (``GET /tasks/{id}/trajectory``, the zip the
task service builds from the conversation) read into what ``_steps.html`` renders, each step with its
actor, its action as a readable line, its outcome, and the frames before and after it.

The frames are inlined as ``data:`` URIs, as the conversation's screenshots are: the view is fetched only when
the user opens it, and the archive is capped (``TASKS_TRAJECTORY_MAX_BYTES``). The reading is
``deskpilot.computer.trajectory``'s, which the evaluation's HTML report shares.
"""

from __future__ import annotations

import base64
import io
import zipfile
from typing import Any

from deskpilot.client.calls import TaskClientError
from deskpilot.computer.trajectory import read_steps


def data_uri(frame: str, png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def steps_view(archive: bytes) -> dict[str, Any]:
    """The template's context: ``steps`` and ``truncated`` (the header's, or None)."""
    try:
        with zipfile.ZipFile(io.BytesIO(archive)) as zipped:
            return read_steps(zipped, data_uri)
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        detail = f"the task service's trajectory could not be read: {exc}"
        raise TaskClientError(detail, 502, detail) from exc
