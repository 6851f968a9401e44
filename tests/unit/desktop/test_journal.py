"""The journal's bounds, without a display: entries by count and by what they hold, frames by count and
bytes."""

from __future__ import annotations

import asyncio
from typing import Any

from deskpilot.computer.actions import parse_action
from deskpilot.config import DesktopSettings
from deskpilot.desktop.journal import FrameStore, Journal, frame_id, outcome_of


async def _settle(quiet: int, most: int) -> tuple[float, bool]:
    return 0.0, True


def recorded(settings: DesktopSettings, bodies: list[dict[str, Any]]) -> dict[str, Any]:
    journal = Journal(settings, lambda: b"", _settle)

    async def run() -> dict[str, Any]:
        for body in bodies:
            journal.record("api", parse_action(body), outcome_of("ok"))
        return journal.page(0, 1000)

    try:
        return asyncio.run(run())
    finally:
        journal.close()


def test_entries_are_bounded_by_count_and_by_what_they_hold() -> None:
    moves = [{"action": "move_mouse", "coordinates": {"x": x, "y": 1}} for x in range(5)]
    page = recorded(DesktopSettings(journal_entries=3, journal_frames=0), moves)
    assert [e["seq"] for e in page["entries"]] == [3, 4, 5] and page["oldest"] == 3
    texts = [{"action": "type_text", "text": c * 3000} for c in "abc"]
    page = recorded(DesktopSettings(journal_entry_bytes=8000, journal_frames=0), texts)
    assert [e["action"]["text"][0] for e in page["entries"]] == ["b", "c"]


def test_a_written_files_content_is_never_held() -> None:
    body = {"action": "write_file", "path": "a.txt", "data": "aGVsbG8K" * 1000}
    entry = recorded(DesktopSettings(journal_frames=0), [body])["entries"][0]
    assert "data" not in entry["action"] and entry["action"]["dataBytes"] == 6000
    assert entry["input"] is False and entry["frameAfter"] is None


def kept(name: str | None) -> str:
    assert name is not None, "the frame was not kept"
    return name


def test_frames_are_kept_once_and_evicted_oldest_first_by_count_and_bytes() -> None:
    store = FrameStore(max_frames=2, max_bytes=250)
    ids = [kept(store.put(bytes([n]) * 100)) for n in range(3)]
    assert store.put(bytes([2]) * 100) == ids[2]  # the same content: the same frame, kept once
    assert [store.get(i) is not None for i in ids] == [False, True, True]
    assert store.usage() == (2, 200)
    assert store.put(b"x" * 300) is None  # larger than every frame together may be
    store.put(b"y" * 200)
    assert store.usage() == (1, 200) and ids[2] == frame_id(bytes([2]) * 100)
