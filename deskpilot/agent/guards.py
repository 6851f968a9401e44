"""Server-side guards of one task run: the step/token/wall-time budget and the repeated-action breaker.

Both return a human-readable reason when they trip; the runner turns it into NEEDS_HELP, so a person
decides whether to continue (a message resumes the task with a fresh budget) rather than the agent
burning money in a loop.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Budget:
    max_steps: int
    max_tokens: int
    max_seconds: float
    steps: int = 0
    tokens: int = 0
    started: float = field(default_factory=time.monotonic)

    def spend(self, tokens: int) -> None:
        self.steps += 1
        self.tokens += tokens

    def exceeded(self) -> str | None:
        """Why the next LLM call must not happen, or None."""
        if self.steps >= self.max_steps:
            return (
                f"I stopped after {self.steps} steps, the step budget of this run (AGENT_MAX_STEPS="
                f"{self.max_steps}). Send a message to let me continue."
            )
        if self.tokens >= self.max_tokens:
            return (
                f"I stopped after using {self.tokens} tokens, the token budget of this run (AGENT_MAX_TOKENS="
                f"{self.max_tokens}). Send a message to let me continue."
            )
        elapsed = time.monotonic() - self.started
        if elapsed >= self.max_seconds:
            return (
                f"I stopped after {elapsed:.0f} s, the time budget of this run (AGENT_MAX_WALL_SECONDS="
                f"{self.max_seconds:g}). Send a message to let me continue."
            )
        return None


def fingerprint(name: str, args: dict[str, Any], outcome: str) -> str:
    """Same tool, same arguments, same outcome (e.g. the screenshot after it) → same fingerprint."""
    blob = json.dumps([name, args, outcome], sort_keys=True, default=str)
    return hashlib.blake2b(blob.encode(), digest_size=16).hexdigest()


@dataclass
class RepeatGuard:
    """Trips when the same action has had the same outcome `limit` times in a row.

    The outcome is part of the fingerprint on purpose: scrolling down five times while the page moves is
    progress, clicking the same spot five times on an unchanged screen is a loop.
    """

    limit: int
    last: str | None = None
    count: int = 0

    def record(self, name: str, args: dict[str, Any], outcome: str) -> str | None:
        fp = fingerprint(name, args, outcome)
        self.count = self.count + 1 if fp == self.last else 1
        self.last = fp
        if self.limit and self.count >= self.limit:
            return (
                f"I repeated {name} with the same arguments {self.count} times and nothing changed, "
                "so I stopped to avoid a loop. Please tell me how to proceed."
            )
        return None
