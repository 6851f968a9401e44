"""A private stand-in for the desktop user's ~/Desktop, so tests never write into the real /home/user."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

DESKTOP_USER = "user"  # DesktopSettings.user's default


def real_desktop(user: str = DESKTOP_USER) -> Path:
    """The desktop user's own ~/Desktop, which tests check they left alone."""
    return Path(pwd.getpwnam(user).pw_dir) / "Desktop"


@contextlib.contextmanager
def private_files_dir(user: str = DESKTOP_USER) -> Iterator[Path]:
    """A fresh directory owned by the desktop user (when we run as root, the desktop service's file
    actions and the programs it launches act with that user's rights), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="deskpilot-desktop-"))
    try:
        if os.geteuid() == 0:
            owner = pwd.getpwnam(user)
            os.chown(path, owner.pw_uid, owner.pw_gid)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
