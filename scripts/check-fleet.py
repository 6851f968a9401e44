"""Check a release's desktops through its task API: `helm test` runs this in the image.

    check-fleet.py AGENT_URL DESKTOPS     (the token in DESKPILOT_TOKEN)

Passes once at least DESKTOPS desktops have announced themselves (GET /desktops) and none of them is
unhealthy: each worker reports its own desktop service's /health with its heartbeat. Waits up to two minutes
for desktops still starting (a refused token fails at once); standard library only.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.request

DEADLINE_S = 120.0


def desktops(url: str, token: str) -> list[dict[str, object]]:
    request = urllib.request.Request(
        f"{url.rstrip('/')}/desktops", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        found: list[dict[str, object]] = json.load(response)
        return found


def problems(found: list[dict[str, object]], expected: int) -> list[str]:
    wrong = [f"{d['name']}: {d.get('problem') or d['state']}" for d in found if d["state"] == "unhealthy"]
    if len(found) < expected:
        wrong.append(f"{len(found)} of {expected} desktops announced: {[d['name'] for d in found]}")
    return wrong


def main(argv: list[str]) -> int:
    url, expected = argv[1], int(argv[2])
    token = os.environ.get("DESKPILOT_TOKEN", "")
    deadline = time.monotonic() + DEADLINE_S
    while True:
        try:
            found = desktops(url, token)
            wrong = problems(found, expected)
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403):  # the token is wrong: waiting will not mend it
                print(f"GET {url}/desktops: {exc}", file=sys.stderr)
                return 1
            found, wrong = [], [f"GET {url}/desktops: {exc}"]
        except (urllib.error.URLError, OSError, ValueError) as exc:
            found, wrong = [], [f"GET {url}/desktops: {exc}"]
        if not wrong:
            for d in found:
                print(f"{d['name']}: {d['state']} at {d['url']}")
            return 0
        if time.monotonic() > deadline:
            print("\n".join(wrong), file=sys.stderr)
            return 1
        time.sleep(2)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
