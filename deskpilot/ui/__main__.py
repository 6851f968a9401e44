"""`python -m deskpilot.ui`: serve the web UI on UI_HOST:UI_PORT (default 127.0.0.1:9992; the appliance
binds its own address)."""

from __future__ import annotations

import uvicorn

from deskpilot.config import UISettings
from deskpilot.ui.server import create_app

if __name__ == "__main__":
    settings = UISettings()
    # log_config=None: uvicorn keeps the one log format create_app configured
    uvicorn.run(
        create_app(settings), host=settings.host, port=settings.port, proxy_headers=True, log_config=None
    )
