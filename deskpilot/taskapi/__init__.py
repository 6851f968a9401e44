"""The task API's contract, what a client may ask of the task service and what it answers, with no
database and no web framework: ``types`` (statuses, priorities, roles, events, names and the answers'
models) and ``requests`` (the request bodies and their validation). The task service implements it;
the agent, the UI, the client and the evaluation speak it; like ``deskpilot.computer`` (the desktop's
contract) it imports no service.
"""
