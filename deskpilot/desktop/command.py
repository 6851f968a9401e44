"""``POST /command``: a shell command as the desktop user, for test harnesses (the evaluation's setup and
checks, a pytest fixture): what a person would type into the desktop's terminal, with its output returned.

It grants nothing the token does not already grant (whoever holds it can type into a terminal); it saves
them the window. The output is capped, the time bounded, and the whole process group is killed at the end
of the time-out.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from deskpilot.desktop.session import Launch
from deskpilot.errors import InvalidAction, first_problem

MAX_OUTPUT = 64 << 10  # bytes of stdout and of stderr each; the rest is cut off (`truncated`)
MAX_SECONDS = 120.0


class CommandRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    command: str = Field(min_length=1, max_length=10_000, description="run by /bin/sh -c as the desktop user")
    timeout: float = Field(
        default=30.0, gt=0, le=MAX_SECONDS, description="seconds before the process group is killed"
    )


class CommandResult(BaseModel):
    """200 body of ``POST /command``; ``exitCode`` is null when the command was killed at its time-out."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    success: Literal[True] = True
    exit_code: int | None = Field(alias="exitCode")
    stdout: str
    stderr: str
    truncated: bool
    timed_out: bool = Field(alias="timedOut")
    ms: float


def parse_request(body: object) -> CommandRequest:
    try:
        return CommandRequest.model_validate(body)
    except ValidationError as exc:
        raise InvalidAction(f"command: {first_problem(exc, 'body')}") from None


async def run(launch: Launch, request: CommandRequest) -> CommandResult:
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *_as_user(launch),
        "/bin/sh",
        "-c",
        request.command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=launch.env,
        cwd=launch.cwd,
        start_new_session=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    reads = asyncio.gather(_capped(proc.stdout), _capped(proc.stderr), proc.wait())
    timed_out = False
    try:
        (out, cut_out), (err, cut_err), code = await asyncio.wait_for(asyncio.shield(reads), request.timeout)
    except TimeoutError:
        timed_out = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        try:  # the pipes close with the group; a program that left it may hold them: not for long
            (out, cut_out), (err, cut_err), _ = await asyncio.wait_for(reads, 5)
        except TimeoutError:
            (out, cut_out), (err, cut_err) = (b"", True), (b"", True)
        code = None
    return CommandResult(
        exit_code=code,
        stdout=out.decode(errors="replace"),
        stderr=err.decode(errors="replace"),
        truncated=cut_out or cut_err,
        timed_out=timed_out,
        ms=round((time.perf_counter() - started) * 1000, 2),
    )


def _as_user(launch: Launch) -> list[str]:
    """The desktop user's identity by setpriv (util-linux): uvloop's subprocesses take no user or group."""
    if not launch.creds:
        return []
    uid, gid = launch.creds["user"], launch.creds["group"]
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"]


async def _capped(stream: asyncio.StreamReader) -> tuple[bytes, bool]:
    """Everything the stream gives until it ends, keeping the first MAX_OUTPUT bytes."""
    kept = bytearray()
    cut = False
    while chunk := await stream.read(1 << 16):
        room = MAX_OUTPUT - len(kept)
        kept += chunk[:room]
        cut = cut or len(chunk) > room
    return bytes(kept), cut
