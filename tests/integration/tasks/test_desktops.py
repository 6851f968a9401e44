"""The fleet's desktops on each backend: placement (a desktop by name, a label, any), no new claim on a
desktop a human took over, a task that moves to another desktop starts over there (its files written
again, its conversation saying so), and the registry's states through GET /desktops."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from deskpilot.tasks.desktops import Identity, Registry
from deskpilot.tasks.leases import Leases
from deskpilot.tasks.store import Store
from deskpilot.tasks.uploads import NewFile
from testbed.task_service import run, serve, with_store

A = Identity("desk-a", (), "http://desk-a.fleet:9990")
B = Identity("desk-b", ("gpu",), "http://desk-b.fleet:9990")
C = Identity("desk-c", ("gpu", "big"), "http://desk-c.fleet:9990")


async def opened(db_url: str) -> Store:
    return await Store.open(db_url)


def test_a_task_runs_where_it_is_placed_or_on_any_desktop(db_url: str) -> None:
    async def go() -> dict[str, str | None]:
        store = await opened(db_url)
        try:
            pinned = await store.create_task("only on c", desktop="desk-c", priority="URGENT")
            labelled = await store.create_task("a gpu", desktop_label="gpu", priority="HIGH")
            anywhere = await store.create_task("anywhere")
            leases = Leases(store)
            got = {"a": await leases.claim_next("wa", 60, A)}  # the pinned and labelled ones are not a's
            got["b"] = await leases.claim_next("wb", 60, B)  # not pinned to b; labelled gpu: yes
            got["c"] = await leases.claim_next("wc", 60, C)
            assert await leases.claim_next("wc2", 60, C) is None
            assert {name: t.id for name, t in got.items() if t} == {
                "a": anywhere.id,
                "b": labelled.id,
                "c": pinned.id,
            }
            return {t.id: t.executed_on for t in got.values() if t}
        finally:
            await store.close()

    assert sorted(v for v in run(go()).values() if v) == ["desk-a", "desk-b", "desk-c"]


def test_without_a_desktop_only_unplaced_tasks_are_claimed(db_url: str) -> None:
    async def go() -> None:
        store = await opened(db_url)
        try:
            await store.create_task("pinned", desktop="desk-a")
            await store.create_task("labelled", desktop_label="gpu")
            assert await Leases(store).claim_next("w", 60) is None
        finally:
            await store.close()

    run(go())


def test_a_desktop_taken_over_by_a_human_claims_nothing_new(db_url: str) -> None:
    async def go() -> None:
        store = await opened(db_url)
        try:
            registry, leases = Registry(store), Leases(store)
            await registry.announce(A, "wa", 60)
            task = await store.create_task("wait for the human")
            taken = await registry.take_over(A.name, True)
            assert taken["state"] == "taken_over" and taken["takenOver"] is True
            assert await leases.claim_next("wa", 60, A) is None
            assert (await leases.claim_next("wb", 60, B)) is not None  # another desktop takes it
            await store.update_task(task.id, status="CANCELLED")
            again = await store.create_task("after the human")
            assert (await registry.take_over(A.name, False))["state"] == "idle"
            claimed = await leases.claim_next("wa", 60, A)
            assert claimed is not None and claimed.id == again.id
        finally:
            await store.close()

    run(go())


def test_a_reclaimed_task_starts_over_on_another_desktop(db_url: str) -> None:
    async def go() -> tuple[list[Any], list[Any]]:
        store = await opened(db_url)
        events: list[Any] = []
        store.subscribe(events.append)
        try:
            leases = Leases(store)
            task = await store.create_task("survive", files=[NewFile("notes.txt", b"hello", None)])
            first = await leases.claim_next("wa", 0.05, A)
            assert first is not None and first.executed_on == "desk-a"
            (upload,) = await store.pending_files(task.id)
            await store.mark_file_written(upload.id, upload.desktop_path)
            assert await store.pending_files(task.id) == []
            await asyncio.sleep(0.1)  # desk-a's lease runs out
            events.clear()
            moved = await leases.claim_next("wb", 60, B)
            assert moved is not None and moved.id == task.id and moved.executed_on == "desk-b"
            assert moved.executed_at == first.executed_at
            _, messages, _ = await store.get_task_detail(task.id)
            return messages, [(e.kind, await store.pending_files(task.id)) for e in events]
        finally:
            await store.close()

    messages, events = run(go())
    note = messages[-1]
    assert note.role == "USER"
    text = note.content[0]["text"]
    assert "Desktop desk-a stopped answering" in text and "starts over on desktop desk-b" in text
    assert "files are written again" in text
    assert [kind for kind, _ in events] == ["task_updated", "new_message"]
    assert [f.name for f in events[0][1]] == ["notes.txt"]  # to be written again on desk-b


def test_a_requeued_task_on_the_same_desktop_keeps_its_files_and_says_nothing(db_url: str) -> None:
    async def go() -> int:
        store = await opened(db_url)
        try:
            leases = Leases(store)
            task = await store.create_task("again", files=[NewFile("a.txt", b"x", None)])
            await leases.claim_next("wa", 60, A)
            (upload,) = await store.pending_files(task.id)
            await store.mark_file_written(upload.id, upload.desktop_path)
            await store.update_task(task.id, status="NEEDS_HELP")
            await store.add_message(task.id, [{"type": "text", "text": "go on"}])
            await leases.claim_next("wa2", 60, A)  # the same desktop, a restarted worker
            assert await store.pending_files(task.id) == []
            _, messages, _ = await store.get_task_detail(task.id)
            return len(messages)
        finally:
            await store.close()

    assert run(go()) == 2  # the description and the reply: no note


def test_get_desktops_gives_each_desktops_state(db_url: str) -> None:
    async def setup(store: Store) -> str:
        registry = Registry(store)
        for desktop in (A, B, C):
            await registry.announce(desktop, f"w-{desktop.name}", 60)
        await registry.announce(Identity("desk-d", (), "http://desk-d.fleet:9990"), "w-d", 60, "no display")
        await registry.announce(Identity("desk-e", (), "http://desk-e.fleet:9990"), "w-e", 0)  # stale
        await registry.take_over("desk-c", True)
        task = await store.create_task("busy", desktop="desk-b")
        await Leases(store).claim_next("w-desk-b", 60, B)
        return task.id

    with serve(db_url) as api:
        task_id = with_store(db_url, setup)
        r = api.get("/desktops")
        assert r.status_code == 200, r.text
        desktops = {d["name"]: d for d in r.json()}
        assert {name: d["state"] for name, d in desktops.items()} == {
            "desk-a": "idle",
            "desk-b": "running",
            "desk-c": "taken_over",
            "desk-d": "unhealthy",
            "desk-e": "unhealthy",
        }
        assert desktops["desk-b"]["task"] == {"id": task_id, "description": "busy", "control": "ASSISTANT"}
        assert desktops["desk-b"]["url"] == "http://desk-b.fleet:9990" and desktops["desk-b"]["labels"] == [
            "gpu"
        ]
        assert desktops["desk-d"]["problem"] == "no display"
        assert "not been heard from" in desktops["desk-e"]["problem"]
        task = api.get(f"/tasks/{task_id}").json()
        assert (task["desktop"], task["desktopLabel"], task["executedOn"]) == ("desk-b", None, "desk-b")
        # a human's takeover of the task it runs shows too
        assert api.post(f"/tasks/{task_id}/takeover").status_code == 200
        assert {d["name"]: d["state"] for d in api.get("/desktops").json()}["desk-b"] == "taken_over"
        assert api.post("/desktops/desk-c/resume").json()["state"] == "idle"


def test_placement_and_desktop_names_are_checked(db_url: str) -> None:
    with serve(db_url) as api:
        r = api.post("/tasks", json={"description": "x", "desktop": "desk-a", "desktopLabel": "gpu"})
        assert r.status_code == 201 and (r.json()["desktop"], r.json()["desktopLabel"]) == ("desk-a", "gpu")
        form = {"description": "y", "desktop": "", "desktopLabel": "gpu"}
        r = api.post("/tasks", data=form, files={"files": ("f.txt", b"1")})
        assert r.status_code == 201 and (r.json()["desktop"], r.json()["desktopLabel"]) == (None, "gpu")
        for bad in ("../x", "a b", "-a", "x" * 64):
            r = api.post("/tasks", json={"description": "x", "desktop": bad})
            assert r.status_code == 400 and r.json()["message"].startswith("desktop:"), r.text
        assert_not_found(api.post("/desktops/nobody/takeover"))
        assert api.post("/desktops/a%20b/takeover").status_code == 400


def assert_not_found(r: httpx.Response) -> None:
    assert r.status_code == 404 and "Desktop nobody not found" in r.json()["message"], r.text


@pytest.mark.postgres
def test_a_worker_announces_its_desktop_and_withdraws_it(pg_server) -> None:
    url = pg_server.create_database()
    with serve(url, worker_enabled=True, desktop_name="desk-w", desktop_labels="x,y") as api:
        desktops = api.get("/desktops").json()
        assert [(d["name"], d["labels"], d["state"]) for d in desktops] == [
            ("desk-w", ["x", "y"], "unhealthy")
        ]
        assert "unreachable" in desktops[0]["problem"]  # the test's desktop URL has no service behind it
    assert with_store(url, lambda store: Registry(store).listing()) == []
