"""Files uploaded with a task: reading them from a create request (JSON or multipart), their limits and
their names on the desktop."""

from __future__ import annotations

import mimetypes
import posixpath
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson
import pybase64
from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.datastructures import UploadFile

from deskpilot.computer.fields import bidi_problem
from deskpilot.config import TaskSettings
from deskpilot.errors import BadRequest, PayloadTooLarge
from deskpilot.taskapi.requests import FileIn, TaskCreate
from deskpilot.taskapi.types import DESKTOP_NAME_PATTERN, TaskPriority, TaskType
from deskpilot.tasks.models import TaskFile

MAX_NAME_BYTES = 255  # NAME_MAX of Linux file systems
_UNSAFE = re.compile(r"[\x00-\x1f\x7f/\\:*?\"<>|]+")


def safe_name(name: str) -> str:
    """Reduce an uploaded file name to a safe basename: no directories, no control or shell-hostile
    characters, no leading dots, at most 255 bytes; never empty."""
    name = unicodedata.normalize("NFC", name).replace("\\", "/")
    name = posixpath.basename(name.rstrip("/"))
    name = _UNSAFE.sub("_", name).strip().lstrip(".").strip()
    if not name:
        name = "file"
    stem, dot, ext = name.rpartition(".")
    if not dot:
        stem, ext = name, ""
    while len(name.encode()) > MAX_NAME_BYTES:
        stem = stem[:-1]
        name = f"{stem}.{ext}" if ext else stem
        if not stem:
            name = name.encode()[:MAX_NAME_BYTES].decode(errors="ignore")
            break
    return name


def numbered(name: str, copy: int) -> str:
    """The ``copy``-th of files called ``name``: report.pdf, report (2).pdf, report (3).pdf ...; the stem
    is shortened to keep the name within 255 bytes."""
    if copy == 1:
        return name
    stem, dot, ext = name.rpartition(".")
    suffix = f" ({copy}).{ext}"
    if not dot or len(suffix.encode()) >= MAX_NAME_BYTES:
        stem, suffix = name, f" ({copy})"
    room = MAX_NAME_BYTES - len(suffix.encode())
    return stem.encode()[:room].decode(errors="ignore") + suffix


def unique_names(names: Iterable[str]) -> list[str]:
    """Make names unique within one task: report.pdf, report (2).pdf, ... (across tasks the worker does
    the same on the desktop, which never replaces a file for an upload)."""
    seen: set[str] = set()
    out: list[str] = []
    for name in names:
        copy = 1
        while numbered(name, copy) in seen:
            copy += 1
        seen.add(numbered(name, copy))
        out.append(numbered(name, copy))
    return out


@dataclass
class NewFile:
    name: str
    data: bytes
    media_type: str | None = None


def guess_media_type(name: str) -> str:
    return mimetypes.guess_type(name)[0] or "application/octet-stream"


def files_note(files: list[TaskFile]) -> str:
    lines = [f"- {f.desktop_path} ({f.size} bytes, {f.media_type})" for f in files]
    return "Files uploaded with this task are saved on the desktop:\n" + "\n".join(lines)


def renamed_note(renamed: list[tuple[str, str]]) -> str:
    """What the task is told when uploads were saved under other names than ``files_note`` announced:
    (announced path, real path) each."""
    lines = [f"- {real} (not {announced})" for announced, real in renamed]
    return (
        "Files of those names were already on the desktop, so these uploads were saved under new names:\n"
        + "\n".join(lines)
    )


# The text fields of a multipart create request.
FORM_FIELDS = (
    "description",
    "priority",
    "type",
    "scheduledFor",
    "model",
    "createdBy",
    "desktop",
    "desktopLabel",
)


def _validate_create(data: Any) -> TaskCreate:
    if not isinstance(data, dict):
        raise BadRequest("body: must be a JSON object")
    try:
        return TaskCreate.model_validate(data)
    except ValidationError as exc:
        raise RequestValidationError([{**err, "loc": ("body", *err["loc"])} for err in exc.errors()]) from exc


def _check_sizes(files: list[NewFile], settings: TaskSettings) -> None:
    if len(files) > settings.max_files:
        raise BadRequest(f"files: at most {settings.max_files} files per task, got {len(files)}")
    for f in files:
        if len(f.data) > settings.max_file_bytes:
            raise PayloadTooLarge(
                f"files: {f.name} is {len(f.data)} bytes; the limit is {settings.max_file_bytes}"
            )
    total = sum(len(f.data) for f in files)
    if total > settings.max_upload_bytes:
        raise PayloadTooLarge(f"files: {total} bytes in all; the limit is {settings.max_upload_bytes}")


async def _parse_json(request: Request, settings: TaskSettings) -> tuple[TaskCreate, list[NewFile]]:
    raw = await request.body()
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"body: invalid JSON ({exc})") from exc
    body = _validate_create(data)
    files = [_decode_file(index, upload) for index, upload in enumerate(body.files)]
    _check_sizes(files, settings)
    return body, files


def _check_name(index: int, name: str) -> None:
    """A name with a bidirectional control character is refused (it would display as another name)."""
    problem = bidi_problem(name)
    if problem is not None:
        raise BadRequest(f"files[{index}].name: {problem}")


def _decode_file(index: int, upload: FileIn) -> NewFile:
    _check_name(index, upload.name)
    encoded = upload.data if upload.data is not None else upload.base64
    if encoded is None:
        raise BadRequest(f"files[{index}].data: required (base64 of the content)")
    if "," in encoded[:100] and encoded.startswith("data:"):
        encoded = encoded.split(",", 1)[1]  # a data: URL as browsers produce it
    try:
        data = pybase64.b64decode(encoded, validate=True)
    except ValueError as exc:
        raise BadRequest(f"files[{index}].data: not valid base64") from exc
    return NewFile(upload.name, data, upload.type)


async def _parse_multipart(request: Request, settings: TaskSettings) -> tuple[TaskCreate, list[NewFile]]:
    form = await request.form(max_files=settings.max_files, max_fields=100, max_part_size=1024 * 1024)
    try:
        data: dict[str, Any] = {}
        files: list[NewFile] = []
        for key, value in form.multi_items():
            if isinstance(value, UploadFile):
                if key != "files":
                    raise BadRequest(f"{key}: file parts must be named 'files'")
                if value.size is not None and value.size > settings.max_file_bytes:
                    limit = settings.max_file_bytes
                    raise PayloadTooLarge(
                        f"files: {value.filename} is {value.size} bytes; the limit is {limit}"
                    )
                _check_name(len(files), value.filename or "")
                files.append(NewFile(value.filename or "file", await value.read(), value.content_type))
                _check_sizes(files, settings)
            elif key in FORM_FIELDS:
                data[key] = value
            elif key == "files" and value != "":  # "" is an empty file input of an HTML form
                raise BadRequest("files: must be file parts (with a filename), not text fields")
        for optional in ("scheduledFor", "desktop", "desktopLabel"):  # an HTML form's empty inputs
            if data.get(optional) == "":
                data.pop(optional)
        body = _validate_create(data)
        _check_sizes(files, settings)
        return body, files
    finally:
        await form.close()


async def read_create_request(request: Request, settings: TaskSettings) -> tuple[TaskCreate, list[NewFile]]:
    """A create request from JSON (files as base64) or multipart/form-data (``files`` parts), with its
    files checked against the limits before anything is stored."""
    length = request.headers.get("content-length")
    if length and length.isdigit() and int(length) > settings.max_upload_bytes * 4 // 3 + 1024 * 1024:
        raise PayloadTooLarge(
            f"request body: larger than the upload limit of {settings.max_upload_bytes} bytes"
        )
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype == "multipart/form-data":
        return await _parse_multipart(request, settings)
    if ctype in ("application/json", ""):
        return await _parse_json(request, settings)
    raise BadRequest("Content-Type: must be application/json or multipart/form-data")


# The multipart form of POST /tasks, for the OpenAPI document (FastAPI cannot derive it: the route reads
# the body itself to accept JSON as well).
MULTIPART_SCHEMA = {
    "type": "object",
    "required": ["description"],
    "properties": {
        "description": {"type": "string", "minLength": 1},
        "priority": {"type": "string", "enum": [p.value for p in TaskPriority]},
        "type": {"type": "string", "enum": [t.value for t in TaskType]},
        "scheduledFor": {"type": "string", "anyOf": [{"format": "date-time"}, {"maxLength": 0}]},
        "model": {"type": "string"},
        "desktop": {"type": "string", "pattern": DESKTOP_NAME_PATTERN},
        "desktopLabel": {"type": "string", "pattern": DESKTOP_NAME_PATTERN},
        "files": {"type": "array", "items": {"type": "string", "format": "binary"}},
    },
}
