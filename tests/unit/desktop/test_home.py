"""The home brought back to its skeleton (deskpilot/desktop/home.py) while the session's programs write."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from deskpilot.desktop import home


def test_what_vanishes_while_the_home_is_pruned_is_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """xfconfd writes ``xfwm4.xml.new`` and renames it: listed by the prune, gone when it comes to it; so
    with a directory removed meanwhile, and one of the kept ones."""
    skeleton, user = tmp_path / "skel", tmp_path / "home"
    (skeleton / "Desktop").mkdir(parents=True)
    (skeleton / "Desktop" / "readme.txt").write_text("hello")
    for name in ("Documents", "cache"):
        (user / name).mkdir(parents=True)
        (user / name / "a").write_text("a")
    (user / "xfwm4.xml.new").write_text("<channel/>")
    (user / "left.txt").write_text("x")
    scandir = os.scandir

    def racing(path: Any) -> Any:
        if isinstance(path, int) or Path(path) != user:
            return scandir(path)
        entries = list(scandir(path))
        os.rename(user / "xfwm4.xml.new", tmp_path / "xfwm4.xml")  # the writer's rename, meanwhile
        for name in ("Documents", "cache"):
            (user / name / "a").unlink()
            (user / name).rmdir()
        return iter(entries)

    monkeypatch.setattr(os, "scandir", racing)
    assert home.home_to_skeleton(user, skeleton) == 2  # left.txt, and cache: rmtree says nothing of it gone
    assert sorted(p.name for p in user.iterdir()) == ["Desktop", "Documents", "Downloads"]
    assert (user / "Desktop" / "readme.txt").read_text() == "hello"


def test_any_other_failure_is_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    skeleton, user = tmp_path / "skel", tmp_path / "home"
    skeleton.mkdir()
    user.mkdir()
    (user / "f").write_text("f")

    def refused(path: str) -> None:
        raise PermissionError(path)

    monkeypatch.setattr(os, "unlink", refused)
    with pytest.raises(PermissionError):
        home.home_to_skeleton(user, skeleton)
