"""Budgets and the repeated-action breaker of a task run."""

from __future__ import annotations

import time

from deskpilot.agent.guards import Budget, RepeatGuard


def reason(budget: Budget) -> str:
    exceeded = budget.exceeded()
    assert exceeded is not None
    return exceeded


def test_step_budget_trips_at_the_limit() -> None:
    b = Budget(max_steps=2, max_tokens=10**9, max_seconds=3600)
    assert b.exceeded() is None
    b.spend(10)
    assert b.exceeded() is None
    b.spend(10)
    assert "AGENT_MAX_STEPS=2" in reason(b)


def test_token_and_time_budgets() -> None:
    b = Budget(max_steps=100, max_tokens=100, max_seconds=3600)
    b.spend(100)
    assert "AGENT_MAX_TOKENS=100" in reason(b)
    b = Budget(max_steps=100, max_tokens=100, max_seconds=0.01)
    time.sleep(0.02)
    assert "AGENT_MAX_WALL_SECONDS" in reason(b)


def test_same_action_same_outcome_trips_the_breaker() -> None:
    g = RepeatGuard(limit=3)
    args = {"coordinates": {"x": 1, "y": 2}, "button": "left", "clickCount": 1}
    assert g.record("computer_click_mouse", args, "screen-A") is None
    assert g.record("computer_click_mouse", dict(reversed(args.items())), "screen-A") is None
    reason = g.record("computer_click_mouse", args, "screen-A")
    assert reason and "computer_click_mouse" in reason and "3 times" in reason


def test_a_changing_outcome_or_another_action_resets_the_count() -> None:
    g = RepeatGuard(limit=3)
    for i in range(10):  # scrolling while the page moves is progress
        assert g.record("computer_scroll", {"direction": "down"}, f"screen-{i}") is None
    g = RepeatGuard(limit=3)
    for _ in range(5):
        assert g.record("computer_wait", {"duration": 5}, "s") is None
        assert g.record("computer_screenshot", {}, "s") is None
