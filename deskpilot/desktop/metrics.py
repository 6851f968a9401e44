"""The desktop service's Prometheus families (``GET /metrics``, ``deskpilot.metrics``).

Recorded by the controller as each action ends (``DesktopController.perform``): its duration by action, the
bytes of the screenshot it returned by format, how long its settle waited and whether the screen settled.
Read when scraped: whether the display answers (the /health probe's) and the path screenshots take (shm, or
getimage over the socket). Action names are the contract's; anything else is ``other``.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge

from deskpilot.computer.actions import ACTION_NAMES
from deskpilot.desktop.capture import MEDIA_TYPES
from deskpilot.desktop.outcome import Outcome
from deskpilot.metrics import OTHER, Histogram

# seconds: a pointer move is ~0.2 ms, a click with a settle ~0.1-1 s, an application launch up to a minute
ACTION_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
# bytes: a scaled JPEG is ~100 kB, a full-screen PNG of a busy desktop 1-3 MB
SCREENSHOT_BUCKETS = tuple(float(1 << n) for n in range(14, 24))  # 16 KiB .. 8 MiB
SETTLE_BUCKETS = (0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 30)
CAPTURE_PATHS = ("shm", "getimage")


class DesktopMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self._actions = Histogram(
            "deskpilot_action_duration_seconds",
            "Desktop actions, from the request's arrival at the controller to its answer, by action",
            "action",
            (*ACTION_NAMES, OTHER),
            ACTION_BUCKETS,
            registry,
        ).series
        shots = Histogram(
            "deskpilot_screenshot_bytes",
            "Screenshots returned by an action, encoded (before base64), by format",
            "format",
            (*MEDIA_TYPES, OTHER),
            SCREENSHOT_BUCKETS,
            registry,
        ).series
        self._shots = {MEDIA_TYPES.get(name, OTHER): series for name, series in shots.items()}
        settles = Histogram(
            "deskpilot_settle_seconds",
            "Waits for the screen to settle after an action (settle asked), by whether it settled in time",
            "settled",
            ("true", "false"),
            SETTLE_BUCKETS,
            registry,
        ).series
        self._settles = {True: settles["true"], False: settles["false"]}
        self.display_up = Gauge(
            "deskpilot_display_up",
            "1 when the display answers and is ours (the /health probe)",
            registry=registry,
        )
        capture = Gauge(
            "deskpilot_capture_path",
            "1 for the path screenshots take: shm (MIT-SHM) or getimage (over the X socket, slower)",
            ["path"],
            registry=registry,
        )
        self._paths = {path: capture.labels(path) for path in CAPTURE_PATHS}

    def action(self, name: str, seconds: float, result: Outcome | None) -> None:
        """One action ended (``result`` None when it failed)."""
        self._actions.get(name, self._actions[OTHER]).observe(seconds)
        if result is None:
            return
        if result.image is not None:
            self._shots.get(result.image.media_type, self._shots[OTHER]).observe(len(result.image.data))
        if result.settled_ms is not None:
            self._settles[bool(result.settled)].observe(result.settled_ms / 1000)

    def scraped(self, display_problem: str | None, capture_path: str | None) -> None:
        """The state a scrape reports: the display probe's answer, the capture path (None: not open yet)."""
        self.display_up.set(0 if display_problem else 1)
        for path, child in self._paths.items():
            child.set(1 if path == capture_path else 0)
