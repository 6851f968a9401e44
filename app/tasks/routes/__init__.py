"""The task service's routes, one module per resource; ``app.tasks.app`` includes them all."""
