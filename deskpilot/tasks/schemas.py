"""The task API's answers written as JSON by plain functions (``task_json`` ...), because they sit on the hot
path; the contract's models (``deskpilot.taskapi``) validate the requests and document the answers in
OpenAPI."""

from __future__ import annotations

from typing import Any

from deskpilot.taskapi.types import iso
from deskpilot.tasks.models import Message, Task, TaskFile


def task_json(task: Task) -> dict[str, Any]:
    return {
        "id": task.id,
        "description": task.description,
        "status": task.status,
        "priority": task.priority,
        "type": task.type,
        "scheduledFor": iso(task.scheduled_for),
        "model": task.model,
        "control": task.control,
        "createdBy": task.created_by,
        "error": task.error,
        "result": task.result,
        "createdAt": iso(task.created_at),
        "updatedAt": iso(task.updated_at),
        "executedAt": iso(task.executed_at),
        "completedAt": iso(task.completed_at),
        "desktop": task.desktop,
        "desktopLabel": task.desktop_label,
        "executedOn": task.executed_on,
        "usage": {
            "promptTokens": task.prompt_tokens or 0,  # None on a task not yet flushed
            "completionTokens": task.completion_tokens or 0,
            "totalTokens": (task.prompt_tokens or 0) + (task.completion_tokens or 0),
        },
    }


def message_json(message: Message) -> dict[str, Any]:
    return {
        "id": message.id,
        "taskId": message.task_id,
        "role": message.role,
        "content": message.content,
        "createdAt": iso(message.created_at),
        "updatedAt": iso(message.updated_at),
    }


def file_json(file: TaskFile) -> dict[str, Any]:
    return {
        "id": file.id,
        "name": file.name,
        "mediaType": file.media_type,
        "size": file.size,
        "path": file.desktop_path,
        "writtenAt": iso(file.written_at),
        "createdAt": iso(file.created_at),
    }


def task_detail_json(task: Task, messages: list[Message], files: list[TaskFile]) -> dict[str, Any]:
    return {
        **task_json(task),
        "messages": [message_json(message) for message in messages],
        "files": [file_json(file) for file in files],
    }
