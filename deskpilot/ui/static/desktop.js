// Live desktop view: noVNC's RFB client (served by the desktop at /vnc/core/rfb.js, proxied here),
// over the same-origin WebSocket bridge /vnc/websockify. View only until the user takes over.

const RETRY_MS = [1000, 2000, 5000, 10000];

export function startDesktop(target, stateEl) {
  let rfb = null;
  let viewOnly = true;
  let attempt = 0;

  function say(state, text) {
    stateEl.dataset.state = state;
    stateEl.textContent = text;
    target.dataset.state = state;
  }

  async function connect() {
    let RFB;
    try {
      ({ default: RFB } = await import("/vnc/core/rfb.js"));
    } catch (e) {
      retry("the desktop's viewer did not load (is the desktop service running?)");
      return;
    }
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    say("connecting", "connecting…");
    rfb = new RFB(target, `${scheme}://${location.host}/vnc/websockify`, { shared: true });
    rfb.viewOnly = viewOnly;
    rfb.scaleViewport = true;
    rfb.background = "transparent";
    rfb.addEventListener("connect", () => {
      attempt = 0;
      say("up", viewOnly ? "live · view only" : "live · you have control");
    });
    rfb.addEventListener("disconnect", () => {
      rfb = null;
      retry("disconnected");
    });
    rfb.addEventListener("securityfailure", (e) => say("down", `refused: ${e.detail.reason || "security failure"}`));
  }

  function retry(why) {
    const ms = RETRY_MS[Math.min(attempt++, RETRY_MS.length - 1)];
    say("down", `${why}; retrying in ${Math.round(ms / 1000)} s`);
    setTimeout(connect, ms);
  }

  connect();
  return {
    setViewOnly(value) {
      viewOnly = value;
      target.dataset.viewOnly = String(value);
      if (rfb) {
        rfb.viewOnly = value;
        if (!value) rfb.focus();
        say("up", value ? "live · view only" : "live · you have control");
      }
    },
    get rfb() { return rfb; },
  };
}
