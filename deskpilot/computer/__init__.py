"""The computer-use contract: what a client may ask of the desktop, with no X connection and no server.

``actions`` (the request models and their validation), ``keys`` (key names), ``geometry`` (the screen and
the one coordinate mapping), ``tools`` (the one tool table MCP and the agent share) and ``client`` (an
HTTP client of ``POST /computer-use``). The desktop service implements this contract; the agent, the UI
and outside clients use it; it imports neither of them.
"""
