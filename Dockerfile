# Deskpilot appliance: Xvfb + Xfce desktop, x11vnc, and the desktop (9990), agent (9991) and UI (9992) services
# under supervisord. A thin wrapper: the same scripts as `make run` install everything, so the two cannot drift.
#   docker build -t deskpilot .
#   docker run -p 9990-9992:9990-9992 deskpilot
FROM debian:bookworm-slim

ENV DEBIAN_FRONTEND=noninteractive \
    LANG=C.UTF-8 \
    PYTHONUNBUFFERED=1 \
    DESKPILOT_HOST=0.0.0.0 \
    DESKPILOT_VENV=/opt/deskpilot/.venv

WORKDIR /opt/deskpilot

# System layer first (Debian packages, the desktop user, noVNC, rootfs/): cached until those files change.
COPY scripts/install-system.sh scripts/
COPY rootfs rootfs
RUN scripts/install-system.sh && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb

# Python layer: a venv from Debian's python3 with the pinned versions, readable by the desktop user.
COPY . .
RUN scripts/install-python.sh "$DESKPILOT_VENV" && rm -rf /root/.cache

EXPOSE 9990 9991 9992
VOLUME ["/home/user", "/var/lib/deskpilot"]
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["/opt/deskpilot/.venv/bin/python", "-c", "import os, urllib.request as u; [u.urlopen(f'http://127.0.0.1:{os.environ.get(k, d)}/health', timeout=4) for k, d in (('DESKTOP_PORT', 9990), ('AGENT_PORT', 9991), ('UI_PORT', 9992))]"]

# supervisord as PID 1 (via the launcher that sets its defaults); the programs run as `user`.
CMD ["/opt/deskpilot/scripts/appliance.sh"]
