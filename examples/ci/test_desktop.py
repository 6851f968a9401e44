"""A real desktop in a test: copy this folder into your project and run `pytest` (docs/client.md)."""

from __future__ import annotations

import time

from deskpilot import Agent, Desktop


def test_the_terminal_writes_a_file(desktop: Desktop) -> None:
    desktop.application("terminal")
    desktop.type_text("echo hello from the terminal > ~/Desktop/hello.txt\n")
    deadline = time.monotonic() + 20
    while True:
        try:
            assert desktop.read_file("hello.txt").text == "hello from the terminal\n"
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    assert desktop.screenshot().size == (1920, 1080)


def test_the_agent_completes_a_task(agent: Agent, desktop: Desktop) -> None:
    task = agent.create("Leave a note on the Desktop")
    assert agent.wait(task.id, timeout=120).status == "COMPLETED"
    assert desktop.read_file("note.txt").text == "hello from the agent"


def test_the_agent_asks_and_goes_on_when_answered(agent: Agent, desktop: Desktop) -> None:
    task = agent.create("Write a file; ask me for the file name")
    assert agent.wait(task.id, timeout=120).status == "NEEDS_HELP"
    agent.reply(task.id, "answered.txt")
    assert agent.wait(task.id, timeout=120).status == "COMPLETED"
    assert desktop.read_file("answered.txt").text == "ok"
