"""A scripted model: an OpenAI-compatible server that plays back a plan of tool calls, so an agent's
plumbing (tasks, budgets, NEEDS_HELP, files) can be tested with no provider key.

    python -m deskpilot.scripted plan.yaml --port 8765
    AGENT_OPENAI_BASE_URL=http://127.0.0.1:8765/v1 AGENT_MODEL=local/scripted ...

It loads without the services (the base distribution); see docs/client.md for the plan's format.
"""

from deskpilot.scripted.plan import Plan, PlanError
from deskpilot.scripted.server import Script, ScriptedModel
from deskpilot.scripted.steps import Answer, Request, fail, text, tool, tools

__all__ = [
    "Answer",
    "Plan",
    "PlanError",
    "Request",
    "Script",
    "ScriptedModel",
    "fail",
    "text",
    "tool",
    "tools",
]
