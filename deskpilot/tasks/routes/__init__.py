"""The task service's routes, one module per resource; ``deskpilot.tasks.app`` includes them all."""
