"""The store and the queue's claim on both backends: every status move, ordering, schedules, leases."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import update

from deskpilot.errors import InvalidTransition, TaskNotFound
from deskpilot.taskapi.types import TaskStatus
from deskpilot.tasks.leases import Leases
from deskpilot.tasks.lifecycle import TRANSITIONS, check_transition
from deskpilot.tasks.models import Task, utcnow
from deskpilot.tasks.store import Store
from deskpilot.tasks.uploads import numbered, safe_name, unique_names

pytestmark = pytest.mark.anyio

# The allowed moves (deskpilot/tasks/lifecycle.py), written out again so that changing them is deliberate.
ALLOWED = {
    ("PENDING", "IN_PROGRESS"),  # queue only
    ("PENDING", "CANCELLED"),
    *(("IN_PROGRESS", s) for s in ("NEEDS_HELP", "NEEDS_REVIEW", "COMPLETED", "FAILED", "CANCELLED")),
    *(("NEEDS_HELP", s) for s in ("IN_PROGRESS", "PENDING", "COMPLETED", "FAILED", "CANCELLED")),
    *(("NEEDS_REVIEW", s) for s in ("COMPLETED", "PENDING", "FAILED", "CANCELLED")),
    ("COMPLETED", "PENDING"),
    ("FAILED", "PENDING"),
    ("CANCELLED", "PENDING"),
}
PAIRS = [(a.value, b.value) for a in TaskStatus for b in TaskStatus if a != b]


def test_transition_table_matches_design() -> None:
    assert {(a.value, b.value) for a, nexts in TRANSITIONS.items() for b in nexts} == ALLOWED


async def _sleep_until(when) -> None:
    await asyncio.sleep(max(0.0, (when - utcnow()).total_seconds()) + 0.02)


async def _store(db_url: str) -> Store:
    return await Store.open(db_url)


async def _task_in(store: Store, status: str) -> str:
    """A task brought to ``status`` by allowed moves only."""
    t = await store.create_task(f"to {status}")
    if status == "PENDING":
        return t.id
    if status == "CANCELLED":
        await store.update_task(t.id, status="CANCELLED")
        return t.id
    claimed = await Leases(store).claim_next("w", 60)
    assert claimed is not None and claimed.id == t.id
    if status != "IN_PROGRESS":
        await store.update_task(t.id, status=status)
    return t.id


async def test_every_status_move_is_allowed_or_refused_as_designed(db_url: str) -> None:
    store = await _store(db_url)
    try:
        for current, new in PAIRS:
            task_id = await _task_in(store, current)
            if (current, new) in ALLOWED and (current, new) != ("PENDING", "IN_PROGRESS"):
                t = await store.update_task(task_id, status=new)
                assert t.status == new
                assert (t.completed_at is not None) == (new in ("COMPLETED", "FAILED", "CANCELLED"))
                assert t.lease_owner is None  # a user move drops the worker's lease
            else:
                with pytest.raises(InvalidTransition) as err:
                    await store.update_task(task_id, status=new)
                assert f"from {current} to {new}" in err.value.message
                assert (await store.get_task(task_id)).status == current
            # Leave the queue empty for the next pair.
            await store.delete_task(task_id)
    finally:
        await store.close()


def test_queue_only_move_is_refused_to_users_but_allowed_to_the_queue() -> None:
    with pytest.raises(InvalidTransition, match="queue"):
        check_transition("PENDING", "IN_PROGRESS")
    check_transition("PENDING", "IN_PROGRESS", by_queue=True)
    check_transition("PENDING", "PENDING")  # same status: no-op


async def test_claim_order_is_priority_then_age_and_waits_for_schedules(db_url: str) -> None:
    store = await _store(db_url)
    try:
        now = utcnow()
        low = await store.create_task("low", priority="LOW")
        med1 = await store.create_task("medium 1")
        urgent_later = await store.create_task(
            "urgent later", priority="URGENT", scheduled_for=now + timedelta(hours=1)
        )
        high = await store.create_task("high", priority="HIGH")
        med2 = await store.create_task("medium 2")
        due_high = await store.create_task(
            "due high", priority="HIGH", scheduled_for=now - timedelta(seconds=1)
        )
        urgent = await store.create_task("urgent", priority="URGENT")
        cancelled = await store.create_task("cancelled", priority="URGENT")
        await store.update_task(cancelled.id, status="CANCELLED")
        # a task re-prioritised after creation keeps its age
        await store.update_task(low.id, priority="HIGH")
        order = []
        while (t := await Leases(store).claim_next("w", 60)) is not None:
            order.append(t.id)
            await store.update_task(t.id, status="COMPLETED")
        assert order == [urgent.id, low.id, high.id, due_high.id, med1.id, med2.id]
        assert urgent_later.id not in order
        assert await Leases(store).next_due_at() == urgent_later.scheduled_for
    finally:
        await store.close()


async def test_scheduled_task_becomes_claimable_when_due(db_url: str) -> None:
    store = await _store(db_url)
    try:
        t = await store.create_task("soon", scheduled_for=utcnow() + timedelta(seconds=1))
        assert await Leases(store).claim_next("w", 60) is None
        await _sleep_until(t.scheduled_for)
        claimed = await Leases(store).claim_next("w", 60)
        assert claimed is not None and claimed.id == t.id and claimed.executed_at is not None
    finally:
        await store.close()


async def test_a_claim_is_never_stamped_older_than_the_change_it_follows(db_url: str) -> None:
    """A reply re-queues a task while the worker waits for the write lock; a client that orders a task's
    updates by updatedAt (the UI does) must see the claim as the newer one."""
    store = await _store(db_url)
    try:
        t = await store.create_task("x")
        ahead = utcnow() + timedelta(seconds=5)  # the re-queue was stamped after the worker read its clock
        async with store.writing() as session:
            await session.execute(update(Task).where(Task.id == t.id).values(updated_at=ahead))
        claimed = await Leases(store).claim_next("w", 60)
        assert claimed is not None and claimed.updated_at > ahead
    finally:
        await store.close()


async def test_expired_lease_is_reclaimed_before_pending_work(db_url: str) -> None:
    store = await _store(db_url)
    try:
        first = await store.create_task("first", priority="LOW")
        claimed = await Leases(store).claim_next("dead-worker", 2)
        assert claimed is not None and claimed.id == first.id and claimed.lease_owner == "dead-worker"
        urgent = await store.create_task("urgent", priority="URGENT")
        got = await Leases(store).claim_next("live-worker", 60)
        assert got is not None and got.id == urgent.id  # the first one's lease is still valid
        await store.update_task(urgent.id, status="COMPLETED")
        assert await Leases(store).claim_next("live-worker", 60) is None
        assert await Leases(store).heartbeat(first.id, "dead-worker", 0.5)  # a live worker keeps it
        await _sleep_until((await store.get_task(first.id)).lease_expires_at)
        got = await Leases(store).claim_next("live-worker", 60)
        assert got is not None
        assert (
            got.id == first.id and got.lease_owner == "live-worker" and got.executed_at == claimed.executed_at
        )
        assert not await Leases(store).heartbeat(first.id, "dead-worker", 60)  # the old owner lost it
        assert await Leases(store).heartbeat(first.id, "live-worker", 60)
    finally:
        await store.close()


async def test_release_fails_a_task_left_in_progress_and_keeps_finished_ones(db_url: str) -> None:
    store = await _store(db_url)
    try:
        a = await store.create_task("a")
        await Leases(store).claim_next("w", 60)
        t = await Leases(store).release(a.id, "w", unfinished_error="stopped early")
        assert t is not None and t.status == "FAILED" and t.error == "stopped early" and t.lease_owner is None
        b = await store.create_task("b")
        await Leases(store).claim_next("w", 60)
        await store.update_task(b.id, status="COMPLETED", result={"answer": 42})
        t = await Leases(store).release(b.id, "w", unfinished_error="x")
        assert t is not None and t.status == "COMPLETED" and t.result == {"answer": 42} and t.error is None
    finally:
        await store.close()


async def test_user_message_requeues_only_waiting_or_finished_tasks(db_url: str) -> None:
    store = await _store(db_url)
    try:
        for status, after in [
            ("NEEDS_HELP", "PENDING"),
            ("NEEDS_REVIEW", "PENDING"),
            ("COMPLETED", "PENDING"),
            ("FAILED", "PENDING"),
            ("PENDING", "PENDING"),
            ("IN_PROGRESS", "IN_PROGRESS"),
            ("CANCELLED", "CANCELLED"),
        ]:
            task_id = await _task_in(store, status)
            await store.add_message(task_id, [{"type": "text", "text": "go on"}])
            t = await store.get_task(task_id)
            assert t.status == after, status
            if status == "FAILED":
                assert t.error is None and t.completed_at is None
            await store.delete_task(task_id)
        # the agent's own messages never re-queue
        task_id = await _task_in(store, "NEEDS_HELP")
        await store.add_message(task_id, [{"type": "text", "text": "?"}], "ASSISTANT")
        assert (await store.get_task(task_id)).status == "NEEDS_HELP"
    finally:
        await store.close()


async def test_summaries_and_events(db_url: str) -> None:
    store = await _store(db_url)
    seen: list[tuple[str, dict]] = []
    store.subscribe(lambda e: seen.append((e.kind, e.data())))
    try:
        t = await store.create_task("x")
        s1 = await store.add_summary(t.id, "first part")
        s2 = await store.add_summary(t.id, "both parts", parent_id=s1.id)
        assert [s.id for s in await store.list_summaries(t.id)] == [s1.id, s2.id]
        await store.update_task(t.id, priority="HIGH")
        await store.delete_task(t.id)
        assert [e for e, _ in seen] == ["task_created", "new_message", "task_updated", "task_deleted"]
        assert seen[0][1]["id"] == t.id and seen[1][1]["taskId"] == t.id and seen[3][1] == {"id": t.id}
        with pytest.raises(TaskNotFound):
            await store.add_summary(t.id, "gone")
    finally:
        await store.close()


async def test_migrations_are_idempotent(db_url: str) -> None:
    for _ in range(2):
        store = await Store.open(db_url)
        await store.close()


def test_safe_name_reduces_to_a_basename() -> None:
    assert safe_name("../../etc/passwd") == "passwd"
    assert safe_name("C:\\Users\\me\\report.pdf") == "report.pdf"
    assert safe_name("a\x00b\x1fc.txt") == "a_b_c.txt"
    assert safe_name("..") == "file" and safe_name("") == "file" and safe_name("/") == "file"
    assert safe_name(".bashrc") == "bashrc"
    long = safe_name("é" * 300 + ".txt")
    assert len(long.encode()) <= 255 and long.endswith(".txt")
    assert len(safe_name("a." + "é" * 300).encode()) == 255  # an "extension" longer than a name may be
    assert unique_names(["a.txt", "a.txt", "b", "b", "a.txt"]) == [
        "a.txt",
        "a (2).txt",
        "b",
        "b (2)",
        "a (3).txt",
    ]
    longest = "é" * 125 + ".pdf"  # 254 bytes: its copies shorten the stem, never the extension
    assert [len(n.encode()) for n in unique_names([longest] * 12)] == [254] * 9 + [255] * 3
    assert unique_names([longest] * 12)[11].endswith("é (12).pdf")
    assert numbered("x." + "e" * 253, 3) == "x." + "e" * 249 + " (3)"  # an "extension" too long to keep
