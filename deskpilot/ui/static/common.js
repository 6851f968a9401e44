// Shared by every page: the task API through the same-origin proxy, the live event socket,
// local times and small notices. Plain ES modules, no build step.

// The task statuses as the task API's enum has them (deskpilot/taskapi/types.py), rendered into every page
// by the server (#statuses): STATUS.PENDING ..., the finished ones, the labels. No status is written here.
const STATUSES = JSON.parse(document.getElementById("statuses").textContent);
export const STATUS = STATUSES.each;
export const FINISHED = STATUSES.finished;
export const STATUS_LABELS = STATUSES.labels;

/** The session ended (logged out elsewhere, expired, or the token changed): back to the login page, then here. */
function toLogin() {
  if (!leaving) location.assign(`/login?next=${encodeURIComponent(location.pathname + location.search)}`);
}

// Logging out here: the server closes this page's sockets as it ends the session, and the page goes to the
// login page itself; it must not chase the closed sockets there with a "then here".
let leaving = false;
document.querySelector("form.logout")?.addEventListener("submit", () => { leaving = true; });

/** Call the task API through /api; resolves to the JSON body, rejects with the agent's message. */
export async function api(method, path, body) {
  const init = { method, headers: {} };
  if (body instanceof FormData) {
    init.body = body;
  } else if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch("/api" + path, init);
  } catch (e) {
    throw new Error("The UI server is not answering: " + e.message);
  }
  if (response.status === 401) toLogin();
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = text; }
  if (!response.ok) {
    const message = data && typeof data === "object" && data.message ? data.message : (text || response.statusText);
    const error = new Error(Array.isArray(message) ? message.join("; ") : String(message));
    error.status = response.status;
    throw error;
  }
  return data;
}

/** GET an HTML fragment from the UI server; rejects with its text on error. */
export async function fragment(url) {
  const response = await fetch(url, { headers: { accept: "text/html" } });
  if (response.status === 401) toLogin();
  const text = await response.text();
  if (!response.ok) {
    let message = text || response.statusText;
    try { message = JSON.parse(text).message || message; } catch { /* plain text */ }
    const error = new Error(message);
    error.status = response.status;
    error.html = text;
    throw error;
  }
  return text;
}

const live = document.getElementById("live");

function setLive(state, text) {
  live.dataset.state = state;
  live.querySelector(".live-text").textContent = text;
}

/**
 * The task service's WebSocket (/ws, relayed at /api/ws; docs/task-api.md): {"event": "task_created"|"task_updated"|"task_deleted"|
 * "new_message", "data": ...}. `taskId` subscribes to that task's events only (`/ws?taskId=`), `events` to those
 * kinds only (`/ws?events=`). `onOpen` runs on every (re)connect so a page can catch up on what it missed while
 * disconnected. Reconnects with backoff.
 */
export function connectEvents({ taskId = null, events = null, onEvent, onOpen = () => {} }) {
  let delay = 500;
  let socket = null;
  function open() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const params = new URLSearchParams();
    if (taskId) params.set("taskId", taskId);
    if (events) params.set("events", events.join(","));
    const query = params.size ? `?${params}` : "";
    socket = new WebSocket(`${scheme}://${location.host}/api/ws${query}`);
    socket.addEventListener("open", () => {
      delay = 500;
      setLive("up", "live");
      if (reloadWhenLive()) return;
      onOpen();
    });
    socket.addEventListener("message", (e) => {
      let msg;
      try { msg = JSON.parse(e.data); } catch { return; }
      if (msg && msg.event) onEvent(msg.event, msg.data);
    });
    socket.addEventListener("close", (e) => {
      if (leaving) return;
      // A refused handshake looks like any other failure to a page: ask whether the session still holds.
      fetch("/api/health").then((r) => { if (r.status === 401) toLogin(); }, () => {});
      const seconds = Math.round(delay / 1000);
      const why = e.reason ? e.reason : "agent not reachable";
      setLive("down", `offline: ${why}; retrying${seconds ? ` in ${seconds} s` : ""}`);
      setTimeout(open, delay);
      delay = Math.min(delay * 2, 10000);
    });
  }
  open();
  return { close: () => socket && socket.close() };
}

/** A page rendered while the agent was down re-renders itself once it is back (at most every 5 s). */
function reloadWhenLive() {
  if (!document.querySelector("[data-reload-when-live]")) return false;
  if ([...document.querySelectorAll("textarea")].some((t) => t.value)) return false; // keep what was typed
  const last = Number(sessionStorage.getItem("deskpilot-reload") || 0);
  if (Date.now() - last < 5000) return false;
  sessionStorage.setItem("deskpilot-reload", String(Date.now()));
  location.reload();
  return true;
}

const timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
const clockFormat = new Intl.DateTimeFormat(undefined, { timeStyle: "short" });

/** Show every <time datetime> under `root` in the browser's time zone ("14:02" today, else date + time). */
export function localizeTimes(root = document) {
  for (const el of root.querySelectorAll("time[datetime]")) {
    const iso = el.getAttribute("datetime");
    const d = new Date(iso);
    if (Number.isNaN(d.getTime())) continue;
    const today = new Date().toDateString() === d.toDateString();
    el.textContent = today ? clockFormat.format(d) : timeFormat.format(d);
    el.title = d.toString();
  }
}

/** A short notice in the corner; errors stay until clicked. */
export function toast(text, kind = "info") {
  const el = document.createElement("div");
  el.className = `toast ${kind}`;
  el.setAttribute("role", kind === "error" ? "alert" : "status");
  el.textContent = text;
  el.addEventListener("click", () => el.remove());
  document.getElementById("toasts").append(el);
  if (kind !== "error") setTimeout(() => el.remove(), 4000);
}

/** Run `fn` now, or once more after the current run if called while running (no overlap, no loss). */
export function serialized(fn) {
  let running = null;
  let again = false;
  return async function run() {
    if (running) { again = true; return running; }
    running = (async () => {
      do { again = false; await fn(); } while (again);
    })().finally(() => { running = null; });
    return running;
  };
}

localizeTimes();
