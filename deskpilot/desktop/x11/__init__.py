"""The X edge of the desktop service: the only modules that import python-xlib and see its exceptions, which
they turn into the service's own (``deskpilot.errors``). ``server`` opens every connection and checks the
display; ``connection`` is XTest input, the keymap and EWMH windows; ``focus`` reads the focused window;
``shm`` and ``damage`` are the capture's (MIT-SHM grabs, DAMAGE counts and boxes); ``clipboard`` owns the
selections. ``tests/unit/test_layout.py`` fails on an Xlib import anywhere else in the package."""
