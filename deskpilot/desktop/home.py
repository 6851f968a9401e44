"""The desktop user's home brought back to its skeleton (``POST /reset``'s last step), with the user's rights:
it runs in the desktop user's worker (``hands``), or on a file thread whose credentials were dropped."""

from __future__ import annotations

import filecmp
import os
import shutil
from pathlib import Path

HOME_DIRS = ("Desktop", "Documents", "Downloads")


def home_to_skeleton(home: Path, skeleton: Path) -> int:
    """Make ``home`` hold what ``skeleton`` holds and nothing else; how many entries were deleted. Links
    are deleted as links, never followed."""
    removed = _prune(home, skeleton, HOME_DIRS)
    directories = [Path(d) for d in HOME_DIRS] + [
        p.relative_to(skeleton) for p in skeleton.rglob("*") if p.is_dir()
    ]
    for directory in directories:
        (home / directory).mkdir(mode=0o755, parents=True, exist_ok=True)
    for source in skeleton.rglob("*"):
        target = home / source.relative_to(skeleton)
        if source.is_file() and not (target.is_file() and filecmp.cmp(source, target, shallow=False)):
            shutil.copyfile(source, target)
            target.chmod(source.stat().st_mode & 0o777)
    return removed


def _prune(directory: Path, skeleton: Path, keep: tuple[str, ...] = ()) -> int:
    """Delete what ``skeleton`` lacks under ``directory``; the directories named in ``keep`` stay, emptied.
    The session's programs write their settings meanwhile (xfconfd: ``xfwm4.xml.new``, then renamed): what
    is gone by the time it is deleted is not an error."""
    removed = 0
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return 0
    for entry in entries:
        model = skeleton / entry.name
        try:
            if (model.is_dir() or entry.name in keep) and entry.is_dir(follow_symlinks=False):
                removed += _prune(Path(entry.path), model)
            elif model.is_file() and entry.is_file(follow_symlinks=False):
                continue
            elif entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, onerror=_unless_gone)
                removed += 1
            else:
                os.unlink(entry.path)
                removed += 1
        except FileNotFoundError:
            continue
    return removed


def _unless_gone(
    function: object, path: str, exc_info: tuple[type[BaseException], BaseException, object]
) -> None:
    if not isinstance(exc_info[1], FileNotFoundError):
        raise exc_info[1]
