"""Deskpilot: an open computer-use appliance."""

__version__ = "0.1.0"
