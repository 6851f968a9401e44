"""A tiny GTK 3 window the settle tests click and type into, from a client that answers the EWMH
_NET_WM_PING as the appliance's GTK applications do (Tk does not). By default a plain area that redraws
nothing on input; a click paints it blue at once and green later with a mode:

- ``steps``: ~80 ms later, after two 40 ms timers of the main loop (as a toolkit's next step comes on a
  timer: a tooltip, a repaint);
- ``tooltip``: 400 ms later, after one timer of the main loop (as GTK shows a tooltip 500 ms after the
  pointer came to rest);
- ``worker``: 300 ms later, from a worker thread's timer, while another worker wakes every 10 ms (as
  Firefox runs a page's timers on a thread of its own and never looks at rest).
- ``call``: 330 ms later, after its main thread has waited 300 ms for one descriptor (as a synchronous
  D-Bus call or a reply of the X server keeps Thunar's while it loads a folder), 30 ms after the click.
- ``quit``: as ``call``, but then it quits instead (its window gone with a ping unanswered).

Run with Debian's /usr/bin/python3 (python3-gi, gir1.2-gtk-3.0).

    /usr/bin/python3 probe_gtk.py TITLE GEOMETRY [steps|tooltip|worker|call|quit]
"""

import os
import select
import sys
import threading
import time

import gi

gi.require_version("Gdk", "3.0")
gi.require_version("Gtk", "3.0")
from gi.repository import Gdk, GLib, Gtk  # noqa: E402

title, geometry = sys.argv[1:3]
mode = sys.argv[3] if len(sys.argv) > 3 else ""
size, _, place = geometry.partition("+")
width, height = (int(v) for v in size.split("x"))
x, y = (int(v) for v in place.split("+"))

window = Gtk.Window(title=title)
window.set_default_size(width, height)
window.move(x, y)
area = Gtk.DrawingArea()


def paint(rgb: tuple[float, float, float]) -> bool:
    # the window's background (the area on it draws nothing): no cairo bindings needed (python3-gi-cairo)
    window.override_background_color(Gtk.StateFlags.NORMAL, Gdk.RGBA(*rgb, 1.0))
    return False


GREEN = (0.0, 1.0, 0.0)


def later_from_a_worker() -> None:
    time.sleep(0.3)
    GLib.idle_add(paint, GREEN)


def a_call_then_green() -> bool:
    reply, writer = os.pipe()  # a reply that never comes (its writer open): the wait times out
    waiting = select.poll()
    waiting.register(reply, select.POLLIN)
    waiting.poll(300)
    os.close(reply)
    os.close(writer)
    if mode == "quit":
        os._exit(0)  # at once: no event read again, no ping answered
    return paint(GREEN)


def clicked(*_: object) -> None:
    paint((0.0, 0.0, 1.0))
    if mode in ("call", "quit"):
        GLib.timeout_add(30, a_call_then_green)
    elif mode == "steps":
        GLib.timeout_add(40, lambda: GLib.timeout_add(40, paint, GREEN) and False)
    elif mode == "tooltip":
        GLib.timeout_add(400, paint, GREEN)
    else:
        threading.Thread(target=later_from_a_worker, daemon=True).start()


def restless() -> None:
    while True:
        time.sleep(0.01)


if mode == "worker":
    threading.Thread(target=restless, daemon=True).start()
if mode:
    paint((0.5, 0.5, 0.5))
    window.add_events(Gdk.EventMask.BUTTON_PRESS_MASK)
    window.connect("button-press-event", clicked)
window.add(area)
window.connect("destroy", Gtk.main_quit)
window.show_all()
Gtk.main()
