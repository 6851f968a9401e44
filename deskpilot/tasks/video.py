"""A trajectory's frames as an MP4 (``GET /tasks/{id}/trajectory?video=true``), made with ffmpeg.

One video frame per step that has a frame (its ``frameAfter``, in step order), at
``TASKS_TRAJECTORY_VIDEO_FPS``, H.264 in yuv420p (what browsers and players decode), at the first frame's size
rounded down to even pixels. ffmpeg runs as a child process with one thread (the machine's cores belong to
the desktop), off the event loop, one encode at a time, killed at ``TASKS_TRAJECTORY_VIDEO_TIMEOUT`` (a
request that waited that long for another's encode is refused with 503). Without ffmpeg the request is
refused with 501 (``VideoUnavailable``): the image does not ship it unless built with it (docs/operations.md).
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tempfile
import threading
import zipfile
from pathlib import Path

import orjson

from deskpilot.computer.geometry import png_size
from deskpilot.config import TaskSettings
from deskpilot.errors import VideoTimedOut, VideoUnavailable

NAME = "trajectory.mp4"
_ONE_AT_A_TIME = threading.Lock()


def ffmpeg_path(program: str) -> str:
    found = shutil.which(program)
    if found is None:
        raise VideoUnavailable(
            f"video: ffmpeg ({program!r}) is not installed where the task service runs; install the Debian "
            "package ffmpeg or set TASKS_TRAJECTORY_FFMPEG (the archive without ?video=true needs none)"
        )
    return found


def video_frames(archive: zipfile.ZipFile) -> list[str]:
    """The frames of the video, in order: each step's frame after it, for the steps that have one."""
    lines = archive.read("trajectory.jsonl").splitlines()[1:]
    names = [orjson.loads(line).get("frameAfter") for line in lines if line.strip()]
    return [f"frames/{name}.png" for name in names if name]


def encode(frames: list[bytes], folder: Path, ffmpeg: str, fps: float, timeout: float) -> bytes:
    """The MP4 of ``frames`` (PNGs), encoded in ``folder``."""
    for number, png in enumerate(frames):
        (folder / f"{number:06d}.png").write_bytes(png)
    size = png_size(frames[0])  # frames come from the archive: PNGs, so it has a size
    width, height = size.width // 2 * 2, size.height // 2 * 2
    out = folder / NAME
    command = [
        ffmpeg, "-nostdin", "-loglevel", "error", "-framerate", f"{fps:g}", "-i", str(folder / "%06d.png"),
        "-vf", f"scale={width}:{height},format=yuv420p", "-c:v", "libx264", "-preset", "veryfast",
        "-threads", "1", "-movflags", "+faststart", "-y", str(out),
    ]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise VideoTimedOut(
            f"video: encoding {len(frames)} frames took over {timeout:g} s (TASKS_TRAJECTORY_VIDEO_TIMEOUT)"
        ) from None
    if done.returncode != 0:
        raise RuntimeError(f"ffmpeg exited {done.returncode}: {done.stderr.decode(errors='replace')[-500:]}")
    return out.read_bytes()


def with_video(archive: bytes, settings: TaskSettings) -> bytes:
    """``archive`` with ``trajectory.mp4`` of its frames added (none when no step has a frame)."""
    program = ffmpeg_path(settings.trajectory_ffmpeg)
    timeout = settings.trajectory_video_timeout
    with zipfile.ZipFile(io.BytesIO(archive)) as zipped:
        frames = [zipped.read(name) for name in video_frames(zipped)]
    if not frames:
        return archive
    if not _ONE_AT_A_TIME.acquire(timeout=timeout):
        raise VideoTimedOut(f"video: another video was being encoded for over {timeout:g} s; try again")
    try:
        with tempfile.TemporaryDirectory(prefix="deskpilot-video-") as folder:
            mp4 = encode(frames, Path(folder), program, settings.trajectory_video_fps, timeout)
    finally:
        _ONE_AT_A_TIME.release()
    buffer = io.BytesIO(archive)
    with zipfile.ZipFile(buffer, "a", zipfile.ZIP_STORED) as zipped:  # an MP4 does not compress further
        zipped.writestr(NAME, mp4)
    return buffer.getvalue()
