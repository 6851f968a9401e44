# Deskpilot appliance: Xvfb + Xfce desktop, x11vnc, and the desktop (9990), agent (9991) and UI (9992) services
# under supervisord. A thin wrapper: the same scripts as `make run` install everything, so the two cannot drift.
#   make image             (scripts/build-image.sh: a Docker engine, the base image, extra CA certificates)
#   DOCKER_BUILDKIT=1 docker build [--secret id=build-ca,src=CA.pem] -t deskpilot .     (the same by hand)
#   docker run --shm-size=1g -v deskpilot-home:/home/user -v deskpilot-state:/var/lib/deskpilot \
#     -p 9990-9992:9990-9992 deskpilot      (no DESKPILOT_TOKEN given: one is generated into the state volume;
#                                             `docker logs` says how to read it)
# BuildKit builds the two stages side by side: the venv (Python stage) while the desktop's packages install.
# Extra CA certificates (a TLS-inspecting proxy's) come in as the secret `build-ca` and stay in no layer unless
# the build argument KEEP_BUILD_CA is set.

# ------------------------------------------------------------------------------------ the venv, on its own
FROM debian:bookworm-slim AS python
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
WORKDIR /opt/deskpilot
COPY scripts/with-build-ca.sh scripts/install-system.sh scripts/install-python.sh scripts/
RUN --mount=type=secret,id=build-ca scripts/with-build-ca.sh scripts/install-system.sh --python
# Only pyproject.toml and constraints.txt invalidate this layer; the code joins the final image later.
COPY pyproject.toml constraints.txt ./
RUN --mount=type=secret,id=build-ca scripts/with-build-ca.sh scripts/install-python.sh --deps-only .venv

# ------------------------------------------------------------------------------------ the appliance
FROM debian:bookworm-slim
ENV DEBIAN_FRONTEND=noninteractive \
    LANG=C.UTF-8 \
    PYTHONUNBUFFERED=1 \
    DESKPILOT_HOST=0.0.0.0 \
    DESKPILOT_VENV=/opt/deskpilot/.venv
WORKDIR /opt/deskpilot

# System layer (Debian packages, the desktop user, the services' system user `deskpilot` and its 0700 state
# directory, noVNC): cached until the package list changes. rootfs/ comes later (an empty one here, so this
# layer does not depend on it).
COPY scripts/image-dpkg-excludes /etc/dpkg/dpkg.cfg.d/deskpilot-image
COPY scripts/with-build-ca.sh scripts/install-system.sh scripts/
# --build-arg DESKPILOT_VIDEO=1: ffmpeg too (~150 MB), for a trajectory's MP4 (docs/operations.md)
ARG DESKPILOT_VIDEO=0
RUN --mount=type=secret,id=build-ca mkdir -p rootfs/home \
 && scripts/with-build-ca.sh scripts/install-system.sh \
 && rm -rf /var/lib/apt/lists/* rootfs

COPY --from=python /opt/deskpilot/.venv .venv

# The code, and rootfs/ over / (the second run of install-system.sh finds every package there); the bytecode
# of the code and of what it imports.
COPY . .
RUN scripts/install-system.sh && .venv/bin/python scripts/precompile.py

ARG KEEP_BUILD_CA=
RUN --mount=type=secret,id=build-ca if [ -n "$KEEP_BUILD_CA" ]; then scripts/with-build-ca.sh --keep; fi

EXPOSE 9990 9991 9992
VOLUME ["/home/user", "/var/lib/deskpilot"]
# Every 5 s; in the first minute a probe waits for the services (Docker 20.10's builder knows no
# --start-interval), so the container is healthy as soon as they answer. Unhealthy after three failed probes.
HEALTHCHECK --interval=5s --timeout=30s --start-period=60s --retries=3 \
  CMD ["/opt/deskpilot/scripts/healthcheck.sh"]

# supervisord as PID 1 (via the launcher that sets its defaults); the session and the desktop service run as
# `user`, the task service and the UI as `deskpilot`, each with only its own variables.
CMD ["/opt/deskpilot/scripts/appliance.sh"]
