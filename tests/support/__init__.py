"""Real components for the tests: an Xvfb display, free ports, servers on loopback."""
