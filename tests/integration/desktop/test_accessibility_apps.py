"""The accessibility tree of the other applications of the enum, on one display of the module's own with the
session's AT-SPI bus: Thunar's location bar, Firefox's document with the heading of a local page,
KeePassXC's unlock field, Thunderbird's folder pane; each on the screen. (Geany and the terminal:
test_accessibility.py, whose display fixture and helpers this module reuses.)"""

from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integration.desktop.conftest import Desktop, wait_for
from tests.integration.desktop.test_accessibility import find, nodes, on_screen, seen, tree

__all__ = ["seen"]  # the module's display, service and AT-SPI bus (test_accessibility.py's fixture)

pytestmark = pytest.mark.timeout(300)

PAGE = "<!doctype html><title>Deskpilot page</title><h1>Deskpilot heading</h1><p>A <a href='#'>link</a>"


def owned_by_the_desktop_user(path: Path) -> Path:
    """The programs the service starts run as the desktop user when we are root: they must read it."""
    if os.geteuid() == 0:
        entry = pwd.getpwnam("user")
        os.chown(path, entry.pw_uid, entry.pw_gid)
    return path


def keys(desktop: Desktop, *chord: str) -> None:
    for press in ("down", "up"):
        desktop.act(action="press_keys", keys=list(chord), press=press)


def test_thunar_has_its_location_bar_holding_the_folder(seen: Desktop) -> None:
    seen.act(action="application", application="directory")
    location = find(seen, "text")  # GTK's path entry: unnamed, its text the folder shown
    assert location["text"].startswith("/") and on_screen(location["bounds"])
    assert "editable" in location["states"]


def test_firefox_has_the_document_and_the_heading_of_a_local_page(seen: Desktop, files_dir: Path) -> None:
    page = files_dir / "a11y-page.html"
    page.write_text(PAGE)
    owned_by_the_desktop_user(page)
    seen.act(action="application", application="browser")
    keys(seen, "ctrl", "l")
    seen.act(action="type_text", text=f"file://{page}\n", settle={})
    heading = find(seen, "heading", "Deskpilot heading", placed=True)
    assert on_screen(heading["bounds"]) and heading["text"] == "Deskpilot heading"
    document = find(seen, "document web", "Deskpilot page")
    assert on_screen(document["bounds"]) and "focusable" in document["states"]


def test_keepassxc_has_its_unlock_field(seen: Desktop, files_dir: Path) -> None:
    database = files_dir / "a11y.kdbx"
    create = ["keepassxc-cli", "db-create", "--set-password", str(database)]
    subprocess.run(create, input="a11y-secret\na11y-secret\n", text=True, check=True, capture_output=True)
    owned_by_the_desktop_user(database)
    seen.act(action="application", application="password_manager")
    # KeePassXC runs one instance: the second start hands the database to the first and exits
    answer = seen.http.post("/command", json={"command": f"keepassxc {database}", "timeout": 20})
    assert answer.status_code == 200, answer.text

    def unlock_field() -> dict[str, Any] | None:
        """The line edit in Qt's PasswordWidget, once the unlock view shows it."""
        fields = (n for n in nodes(tree(seen)["root"]) if n["name"] == "Password field")
        inner = (c for n in fields for c in n["children"] if c["role"] in ("text", "password text"))
        return next((c for c in inner if on_screen(c["bounds"])), None)

    entry: dict[str, Any] = wait_for(unlock_field, 30, "KeePassXC's unlock field")
    assert "editable" in entry["states"]
    unlock = find(seen, "push button", "Unlock")
    assert on_screen(unlock["bounds"])


def test_thunderbird_has_its_folder_pane(seen: Desktop) -> None:
    seen.act(action="application", application="email_client")
    options = find(seen, "push button", "Folder pane options")  # the folder pane's header
    assert on_screen(options["bounds"])
    pane: dict[str, Any] = next(n for n in nodes(tree(seen)["root"]) if n["role"] == "tree")
    assert on_screen(pane["bounds"]) and "focusable" in pane["states"]
