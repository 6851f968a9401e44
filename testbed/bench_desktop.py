"""The desktop the benches measure: its own Xvfb 1920x1080x24 with xfwm4, two xterms full of text and geany,
and the desktop service as in production (its own uvicorn process, one worker, on a free port)."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

from Xlib import X
from Xlib import display as xdisplay

from testbed import ROOT
from testbed.desktop_process import WEBSOCKETS
from testbed.net import free_port, wait_http
from testbed.xvfb import Display, start_window_manager, start_xvfb


@dataclass
class BenchDesktop:
    display: Display
    url: str
    service: subprocess.Popen[bytes]


class Changer:
    """Changes one pixel of the root window (bottom-right corner, under no window) at each call, so each
    screenshot after it needs a fresh capture."""

    def __init__(self, display: str) -> None:
        self.d = xdisplay.Display(display)
        root = self.d.screen().root
        self.root, self.gcs = root, [root.create_gc(foreground=c) for c in (0x000000, 0xFFFFFF)]
        # drawing over the windows too (a column through every row, whatever covers it)
        over = X.IncludeInferiors
        self.over = [root.create_gc(foreground=c, subwindow_mode=over) for c in (0x000000, 0xFFFFFF)]
        self.n = 0

    def change(self) -> None:
        self.n += 1
        self.root.fill_rectangle(self.gcs[self.n % 2], 1919, 1079, 1, 1)
        self.d.sync()

    def change_corners(self) -> None:
        """Two pixels, top-left and bottom-right: what changed spans the whole screen."""
        self.n += 1
        for x, y in ((0, 0), (1919, 1079)):
            self.root.fill_rectangle(self.gcs[self.n % 2], x, y, 1, 1)
        self.d.sync()

    def change_every_row(self) -> None:
        """A column of the screen's height at the right edge, over the windows: every row changed."""
        self.n += 1
        self.root.fill_rectangle(self.over[self.n % 2], 1919, 0, 1, 1080)
        self.d.sync()


@contextlib.contextmanager
def bench_desktop() -> Iterator[BenchDesktop]:
    d = start_xvfb()
    try:
        start_window_manager(d)
        text = "seq 1 4000 | xargs -n 12 echo; ls -la /usr/bin | head -80; cat"
        for geo in ("120x50+0+0", "120x50+900+100"):
            d.spawn(["xterm", "-geometry", geo, "-e", "sh", "-c", text])
        if shutil.which("geany"):
            d.spawn(["geany", "-i", "-c", "/tmp/deskpilot-bench-geany", "/usr/share/doc/geany/README.gz"])
        time.sleep(3)
        port = free_port()
        argv = [sys.executable, "-m", "uvicorn", "--factory", "deskpilot.desktop.api:create_app", *WEBSOCKETS]
        argv += ["--port", str(port), "--workers", "1", "--log-level", "warning"]
        service = d.spawn(argv, env={"DESKTOP_DISPLAY": d.name}, cwd=ROOT)
        url = f"http://127.0.0.1:{port}"
        wait_http(f"{url}/health")
        yield BenchDesktop(d, url, service)
    finally:
        d.stop()
