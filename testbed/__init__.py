"""The testbed the tests and the benchmarks stand on: a private Xvfb, free ports, servers on loopback, the
appliance and its peers started and stopped. Not part of the package: the wheel carries deskpilot/ only."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the checkout
