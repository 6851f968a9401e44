"""A fleet on one machine: three appliances (three displays, three port sets, three workers) and two API-only
task services on one PostgreSQL, with the scripted model. 60 tasks spread over the three desktops, each run
exactly once, every event seen on both APIs' /ws; a desktop killed mid-task loses its lease and another
desktop finishes the task, saying so; a task pinned to a desktop runs there; the helm test's check passes
against the fleet."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.sync.client import connect

from deskpilot.scripted import Plan, ScriptedModel
from testbed import ROOT
from testbed.fleet import Fleet, fleet
from testbed.postgres import PostgresServer

NAMES = ["fleet-a", "fleet-b", "fleet-c"]
LEASE_S = 3.0
PLAN = {
    "model": "scripted",
    "tasks": [
        {  # long enough to be killed in the middle of: ten waits of half a second (never the same one
            # twice: the agent stops a model that repeats itself)
            "match": "^slow",
            "steps": [{"tool": "computer_wait", "args": {"duration": 500 + i}} for i in range(10)]
            + [{"tool": "set_task_status", "args": {"status": "completed", "description": "slow done"}}],
        },
        {
            "match": ".",
            "steps": [{"tool": "set_task_status", "args": {"status": "completed", "description": "ok"}}],
        },
    ],
}


@pytest.fixture(scope="module")
def the_fleet() -> Iterator[Fleet]:
    pg = PostgresServer().start()
    try:
        with (
            ScriptedModel(plan=Plan.model_validate(PLAN)).serve() as model,
            fleet(pg.create_database(), model, NAMES, apis=2, lease_seconds=LEASE_S) as f,
        ):
            yield f
    finally:
        pg.stop()


class Events:
    """Every frame one API's /ws sends, gathered by a thread."""

    def __init__(self, url: str, token: str) -> None:
        self.frames: list[dict[str, Any]] = []
        self.ws = connect(url, additional_headers={"Authorization": f"Bearer {token}"})
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            for raw in self.ws:
                self.frames.append(json.loads(raw))
        except Exception:  # closed
            return

    def completed(self) -> set[str]:
        return {
            f["data"]["id"] for f in list(self.frames)
            if f["event"] == "task_updated" and f["data"]["status"] == "COMPLETED"
        }  # fmt: skip

    def close(self) -> None:
        self.ws.close()


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"not within {timeout:g} s: {what}"
        time.sleep(0.1)


def test_sixty_tasks_spread_over_three_desktops_each_run_once(the_fleet: Fleet) -> None:
    listeners = [Events(api.ws_url, the_fleet.token) for api in the_fleet.apis]
    try:
        with the_fleet.client(0) as one, the_fleet.client(1) as two:
            ids = [
                (one if i % 2 else two).post("/tasks", json={"description": f"task {i}"}).json()["id"]
                for i in range(60)
            ]

            def done() -> bool:
                return all(one.get(f"/tasks/{i}").json()["status"] == "COMPLETED" for i in ids[-5:]) and all(
                    t["status"] == "COMPLETED"
                    for t in one.get("/tasks", params={"limit": 100}).json()
                    if t["id"] in ids
                )

            wait_for(done, 120, "60 tasks completed")
            tasks = [one.get(f"/tasks/{i}").json() for i in ids]
        ran_on = Counter(t["executedOn"] for t in tasks)
        assert set(ran_on) == set(NAMES), ran_on  # every desktop took some
        for t in tasks:  # exactly once: one claim, one model call, one result
            assert t["status"] == "COMPLETED" and t["result"]["description"] == "ok", t
            assert t["executedAt"] and t["completedAt"]
        for events in listeners:  # whichever process changed it, both APIs told their clients
            wait_for(lambda e=events: set(ids) <= e.completed(), 10, "every completion on every /ws")
    finally:
        for events in listeners:
            events.close()


def test_a_task_pinned_to_a_desktop_runs_there(the_fleet: Fleet) -> None:
    with the_fleet.client(1) as api:
        ids = [
            api.post("/tasks", json={"description": f"pinned {i}", "desktop": "fleet-b"}).json()["id"]
            for i in range(4)
        ]
        wait_for(
            lambda: all(api.get(f"/tasks/{i}").json()["status"] == "COMPLETED" for i in ids), 60, "pinned"
        )
        assert {api.get(f"/tasks/{i}").json()["executedOn"] for i in ids} == {"fleet-b"}
        desktops = {d["name"]: d for d in api.get("/desktops").json()}
        assert set(desktops) == set(NAMES) and {d["state"] for d in desktops.values()} == {"idle"}


def test_the_helm_tests_check_passes_against_the_fleet(the_fleet: Fleet) -> None:
    check = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "check-fleet.py"), the_fleet.apis[0].url, "3"],
        env={"DESKPILOT_TOKEN": the_fleet.token}, capture_output=True, text=True, timeout=150,
    )  # fmt: skip
    assert check.returncode == 0, check.stderr
    assert sorted(line.split(":")[0] for line in check.stdout.splitlines()) == NAMES
    wrong = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "check-fleet.py"), the_fleet.apis[0].url, "3"],
        env={"DESKPILOT_TOKEN": "not-the-token"}, capture_output=True, text=True, timeout=150,
    )  # fmt: skip
    assert wrong.returncode == 1 and "401" in wrong.stderr


def test_a_desktop_that_dies_mid_task_hands_it_to_another(the_fleet: Fleet) -> None:
    # last: it kills a desktop of the module's fleet
    with the_fleet.client(0) as api:
        task = api.post("/tasks", json={"description": "slow: ten waits"}).json()

        def running_somewhere() -> bool:
            t = api.get(f"/tasks/{task['id']}").json()
            return (
                t["status"] == "IN_PROGRESS"
                and t["executedOn"] is not None
                and len(t.get("messages", [])) > 3
            )

        wait_for(running_somewhere, 30, "the slow task running")
        victim = api.get(f"/tasks/{task['id']}").json()["executedOn"]
        killed_at = time.monotonic()
        the_fleet.kill(victim)
        wait_for(
            lambda: api.get(f"/tasks/{task['id']}").json()["executedOn"] not in (None, victim),
            LEASE_S + 5, "another desktop took the task over within the lease",
        )  # fmt: skip
        moved_after = time.monotonic() - killed_at
        finished = ("COMPLETED", "FAILED", "CANCELLED", "NEEDS_HELP")
        with contextlib.suppress(AssertionError):
            wait_for(lambda: api.get(f"/tasks/{task['id']}").json()["status"] in finished, 30, "finished")
        final = api.get(f"/tasks/{task['id']}").json()
        assert final["status"] == "COMPLETED", (
            final["status"],
            final["error"],
            final["executedOn"],
            final["messages"][-4:],
        )
        assert final["result"]["description"] == "slow done" and final["executedOn"] != victim
        said = " ".join(str(m["content"]) for m in final["messages"])
        assert (
            f"Desktop {victim} stopped answering" in said
            and f"starts over on desktop {final['executedOn']}" in said
        )
        assert moved_after <= LEASE_S + 5
        states = {d["name"]: d["state"] for d in api.get("/desktops").json()}
        wait_for(
            lambda: {d["name"]: d["state"] for d in api.get("/desktops").json()}[victim] == "unhealthy",
            LEASE_S + 2, "the dead desktop shown unhealthy",
        )  # fmt: skip
        assert set(states) == set(NAMES)
