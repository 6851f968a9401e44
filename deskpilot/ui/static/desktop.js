// Live desktop view: noVNC's RFB client (served by the desktop at /vnc/core/rfb.js, proxied here),
// over the same-origin WebSocket bridge /vnc/websockify. View only until the user takes over.
// A desktop of the fleet is the same under /desktops/<name>/vnc (the `base`; setBase moves the view there).
// The desktop enforces view only itself: a connection takes input only when opened with ?interactive=1,
// so taking over (and handing back) reconnects in the other mode; noVNC's viewOnly just stops sending.

const RETRY_MS = [1000, 2000, 5000, 10000];

export function startDesktop(target, stateEl, base = "/vnc") {
  let rfb = null;
  let viewOnly = true;
  let attempt = 0;
  let timer = null;

  function say(state, text) {
    stateEl.dataset.state = state;
    stateEl.textContent = text;
    target.dataset.state = state;
  }

  async function connect() {
    timer = null;
    let RFB;
    try {
      ({ default: RFB } = await import(`${base}/core/rfb.js`));
    } catch (e) {
      retry("the desktop's viewer did not load (is the desktop service running?)");
      return;
    }
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const interactive = !viewOnly;
    say("connecting", "connecting…");
    const url = `${scheme}://${location.host}${base}/websockify${interactive ? "?interactive=1" : ""}`;
    const client = new RFB(target, url, { shared: true });
    client.viewOnly = !interactive;
    client.scaleViewport = true;
    client.background = "transparent";
    client.addEventListener("connect", () => {
      attempt = 0;
      target.dataset.mode = interactive ? "interactive" : "view";
      if (interactive) client.focus();
      say("up", interactive ? "live · you have control" : "live · view only");
    });
    client.addEventListener("disconnect", () => {
      if (rfb !== client) return; // replaced on purpose (a change of mode): its successor is connecting
      rfb = null;
      retry("disconnected");
    });
    client.addEventListener("securityfailure", (e) => say("down", `refused: ${e.detail.reason || "security failure"}`));
    rfb = client;
  }

  function retry(why) {
    const ms = RETRY_MS[Math.min(attempt++, RETRY_MS.length - 1)];
    say("down", `${why}; retrying in ${Math.round(ms / 1000)} s`);
    timer = setTimeout(connect, ms);
  }

  function reconnect() {
    if (!rfb) return; // connecting or waiting to retry: the next connection takes the new mode
    const old = rfb;
    rfb = null;
    old.viewOnly = true; // no input on the way out
    old.disconnect();
    if (timer === null) connect();
  }

  connect();
  return {
    setViewOnly(value) {
      target.dataset.viewOnly = String(value);
      if (value === viewOnly) return;
      viewOnly = value;
      reconnect();
    },
    setBase(value) {
      if (value === base) return;
      base = value;
      target.dataset.base = value;
      reconnect();
    },
    get rfb() { return rfb; },
  };
}
