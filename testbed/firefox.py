"""Debian's Firefox ESR driven over WebDriver BiDi, just enough to load pages and run checks in them.

Playwright's Firefox needs its own patched build (which cannot be downloaded here) and its
`moz-firefox` BiDi channel needs commands ESR lacks, so this speaks the standard protocol directly:
navigate, evaluate JavaScript, collect the page's errors.
"""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from websockets.sync.client import connect

FIREFOX = shutil.which("firefox-esr") or shutil.which("firefox") or "/usr/bin/firefox-esr"


class Firefox:
    def __init__(self) -> None:
        self.profile = tempfile.TemporaryDirectory(prefix="ff-bidi-")
        prefs = Path(self.profile.name) / "user.js"
        prefs.write_text(
            'user_pref("browser.shell.checkDefaultBrowser", false);\n'
            'user_pref("datareporting.policy.dataSubmissionEnabled", false);\n'
            'user_pref("app.update.disabledForTesting", true);\n'
            'user_pref("browser.aboutwelcome.enabled", false);\n'
        )
        self.proc = subprocess.Popen(
            [FIREFOX, "--headless", "--remote-debugging-port", "0", "--profile", self.profile.name],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        info = Path(self.profile.name) / "WebDriverBiDiServer.json"
        deadline = time.monotonic() + 60
        while not info.exists() or not info.read_text().strip().endswith("}"):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.close()
                raise RuntimeError("Firefox did not start its WebDriver BiDi server")
            time.sleep(0.1)
        port = json.loads(info.read_text())["ws_port"]
        self.ws = connect(f"ws://127.0.0.1:{port}/session", max_size=None)
        self.ids = itertools.count(1)
        self.errors: list[str] = []
        self.call("session.new", {"capabilities": {}})
        self.call("session.subscribe", {"events": ["log.entryAdded"]})
        self.context = self.call("browsingContext.getTree", {})["contexts"][0]["context"]

    def call(self, method: str, params: dict, timeout: float = 30) -> dict:
        cid = next(self.ids)
        self.ws.send(json.dumps({"id": cid, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            msg = json.loads(self.ws.recv(timeout=max(deadline - time.monotonic(), 0.01)))
            if msg.get("type") == "event":
                p = msg.get("params", {})
                if (
                    msg.get("method") == "log.entryAdded"
                    and p.get("level") == "error"
                    and p.get("type") == "javascript"
                ):
                    self.errors.append(p.get("text", ""))
                continue
            if msg.get("id") != cid:
                continue
            if msg.get("type") == "error":
                raise RuntimeError(f"{method}: {msg.get('error')}: {msg.get('message')}")
            return msg["result"]

    def goto(self, url: str) -> None:
        self.call("browsingContext.navigate", {"context": self.context, "url": url, "wait": "complete"})

    def js(self, expression: str):
        """Evaluate `expression` (awaiting a promise) in the page; returns its JSON-able value."""
        result = self.call(
            "script.evaluate",
            {
                "expression": f"(async () => JSON.stringify(await ({expression})))()",
                "target": {"context": self.context},
                "awaitPromise": True,
            },
        )
        if result.get("type") == "exception":
            raise AssertionError(f"{expression}: {result['exceptionDetails'].get('text')}")
        value = result["result"].get("value")
        return None if value is None else json.loads(value)

    def wait_for(self, expression: str, timeout: float = 15):
        """Poll until `expression` is truthy; a script error (page not there yet) counts as "not yet"."""
        deadline = time.monotonic() + timeout
        last: object = None
        while True:
            try:
                value = self.js(expression)
            except AssertionError as e:
                value, last = None, e
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {expression} (last: {last!r})")
            time.sleep(0.1)

    def close(self) -> None:
        try:
            if getattr(self, "ws", None):
                self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.profile.cleanup()
