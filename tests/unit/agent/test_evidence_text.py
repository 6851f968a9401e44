"""What the model is told a screen-changing action did, from the desktop's evidence."""

from __future__ import annotations

from deskpilot.agent.computer import describe, unsettled
from deskpilot.computer.geometry import Size


def test_a_click_that_changed_nothing_says_so() -> None:
    same = {"id": 5, "title": "Terminal", "class": "Xfce4-terminal"}
    evidence = {"pointer": {"x": 1, "y": 2}, "focusBefore": same, "focusAfter": same, "screenChanged": False}
    assert describe(evidence) == "Done. Nothing on the screen changed."


def test_a_focus_that_moved_is_named() -> None:
    evidence = {
        "focusBefore": {"id": 5, "title": "Terminal", "class": "x"},
        "focusAfter": {"id": 7, "title": "notes.txt - Geany", "class": "Geany"},
        "screenChanged": True,
    }
    assert describe(evidence) == "Done. The focus moved to the window 'notes.txt - Geany'."


def test_no_evidence_is_plain_done() -> None:
    assert describe(None) == "Done." and describe({"screenChanged": True}) == "Done."


def test_where_the_screen_changed_is_told_in_the_models_pixels() -> None:
    evidence = {"screenChanged": True, "damaged": {"x": 960, "y": 540, "width": 960, "height": 540}}
    assert describe(evidence, Size(1280, 720)) == "Done. The screen changed within x=640..1279, y=360..719."


def test_keys_that_went_nowhere_are_told_with_what_to_do() -> None:
    evidence = {"screenChanged": False, "keysDelivered": False, "keysTo": None}
    said = describe(evidence)
    assert "the keys went nowhere: click into a window first" in said and "Nothing on the screen" in said


def test_a_frame_taken_before_the_screen_came_to_rest_is_said_to_be_one() -> None:
    said = unsettled({"settled": False, "settledMs": 3000.4, "drawn": True})
    assert said.startswith(" The screen had not come to rest after 3.0 s")
    assert unsettled({"settled": True, "settledMs": 80.0}) == "" and unsettled({}) == ""


def test_keys_that_changed_no_text_say_so() -> None:
    evidence = {"keysDelivered": True, "screenChanged": True, "textChanged": False}
    assert describe(evidence) == "Done. The text of the focused field did not change."
    assert "text" not in describe({**evidence, "textChanged": True})
