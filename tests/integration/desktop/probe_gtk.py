"""A tiny GTK 3 window the settle tests click and type into: a plain coloured area that redraws nothing on
input, from a client that answers the EWMH _NET_WM_PING as the appliance's GTK applications do (Tk does not).
Run with Debian's /usr/bin/python3 (python3-gi, gir1.2-gtk-3.0).

    /usr/bin/python3 probe_gtk.py TITLE GEOMETRY
"""

import sys

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import Gtk  # noqa: E402

title, geometry = sys.argv[1:3]
size, _, place = geometry.partition("+")
width, height = (int(v) for v in size.split("x"))
x, y = (int(v) for v in place.split("+"))

window = Gtk.Window(title=title)
window.set_default_size(width, height)
window.move(x, y)
window.add(Gtk.DrawingArea())
window.connect("destroy", Gtk.main_quit)
window.show_all()
Gtk.main()
