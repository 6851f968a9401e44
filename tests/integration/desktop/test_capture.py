"""Screenshots without MIT-SHM: a plain GetImage over the socket, pixel for pixel what shared memory gives.

Each display shows the same static scene, a pattern set as the root window's background, and the service's
screenshots of it are compared with the pattern and with each other.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from contextlib import contextmanager

import cv2
import numpy as np
import pytest
from Xlib import X
from Xlib import display as xdisplay

from testbed.xvfb import start_xvfb
from tests.integration.desktop.conftest import Desktop, serve

WIDTH, HEIGHT = 1920, 1080


def scene() -> np.ndarray:
    """A deterministic RGB pattern: 8x8 blocks of every kind of colour, so no channel can be mixed up."""
    blocks = np.random.default_rng(11).integers(0, 256, (HEIGHT // 8, WIDTH // 8, 3), dtype=np.uint8)
    return np.repeat(np.repeat(blocks, 8, axis=0), 8, axis=1)


@contextmanager
def showing(name: str, rgb: np.ndarray) -> Iterator[None]:
    """``rgb`` as the root window's background on display ``name``, for the duration of the block."""
    d = xdisplay.Display(name)
    root = d.screen().root
    pixmap = root.create_pixmap(WIDTH, HEIGHT, 24)
    gc = pixmap.create_gc()
    bgrx = np.zeros((HEIGHT, WIDTH, 4), np.uint8)
    bgrx[..., :3] = rgb[..., ::-1]
    rows = 20  # one request stays under the X server's request size limit
    for y in range(0, HEIGHT, rows):
        pixmap.put_image(gc, 0, y, WIDTH, rows, X.ZPixmap, 24, 0, bgrx[y : y + rows].tobytes())
    root.change_attributes(background_pixmap=pixmap)
    root.clear_area(0, 0, WIDTH, HEIGHT)
    d.sync()
    try:
        yield
    finally:
        d.close()


def shot(desktop: Desktop, **options: object) -> bytes:
    return base64.b64decode(desktop.act(action="screenshot", **options)["data"]["image"])


def rgb_of(png: bytes) -> np.ndarray:
    image = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR)
    assert image is not None
    return cv2.cvtColor(image, cv2.COLOR_BGR2RGB)


@contextmanager
def service(extra_args: list[str], user: str | None = None) -> Iterator[Desktop]:
    d = start_xvfb(extra_args=extra_args, user=user)
    try:
        with showing(d.name, scene()), serve(d) as desktop:
            yield desktop
    finally:
        d.stop()


def screenshots(desktop: Desktop) -> dict[str, bytes]:
    return {
        "png": shot(desktop),
        "jpeg": shot(desktop, format="jpeg", quality=70),
        "small": shot(desktop, width=960),
    }


def test_without_mit_shm_the_screenshot_is_the_one_shared_memory_gives() -> None:
    with service([]) as shared:
        assert shared.http.get("/health").json()["capture"] == "shm"
        reference = screenshots(shared)
    with service(["-extension", "MIT-SHM"]) as plain:
        assert plain.http.get("/health").json()["capture"] == "getimage"
        fallback = screenshots(plain)
    assert (rgb_of(reference["png"]) == scene()).all()
    assert fallback == reference  # every format byte for byte: the same pixels went into the encoders


def test_when_the_server_cannot_attach_our_segment_the_screenshot_comes_over_the_socket() -> None:
    if os.geteuid() != 0:
        pytest.skip("runs Xvfb as another user, which needs root")
    # An X server of another user may not attach the service's 0600 segment (the appliance's mistake
    # when Xvfb and the service run as different users): the server answers the attach with BadAccess.
    with service([], user="user") as desktop:
        assert (rgb_of(shot(desktop)) == scene()).all()
        assert desktop.http.get("/health").json()["capture"] == "getimage"
