// Task page: the conversation streams in, the buttons follow the task's status, the desktop is
// live beside it (view only until the user takes over).
import { FINISHED, STATUS, STATUS_LABELS, api, connectEvents, fragment, localizeTimes, serialized, toast } from "./common.js";
import { startDesktop } from "./desktop.js";

const page = document.getElementById("task-page");
const taskId = page.dataset.taskId;
let task = JSON.parse(document.getElementById("task-data").textContent);

const conversation = document.getElementById("conversation");
const screen = document.getElementById("screen");
const desktop = startDesktop(screen, document.getElementById("desktop-state"), screen.dataset.base);

// Which buttons make sense in which state (the allowed moves of deskpilot/tasks/lifecycle.py). A finished
// task has no agent to pause: it offers neither take-over nor hand-back (the API refuses a take-over).
const ACTIVE = Object.values(STATUS).filter((s) => s !== STATUS.PENDING && !FINISHED.includes(s));
const finished = (t) => FINISHED.includes(t.status);
const SHOWN = {
  complete: (t) => ACTIVE.includes(t.status),
  cancel: (t) => t.status === STATUS.PENDING || ACTIVE.includes(t.status),
  rerun: (t) => finished(t),
  delete: () => true,
  takeover: (t) => !finished(t) && t.control !== "USER",
  resume: (t) => !finished(t) && t.control === "USER",
};

function applyState(next) {
  // A catch-up fetch may answer after a newer event: never step back in time.
  if (next.updatedAt && task.updatedAt && next.updatedAt < task.updatedAt) return;
  task = { ...task, ...next };
  const userHasControl = task.control === "USER" && !finished(task);
  document.body.dataset.status = task.status;
  document.body.dataset.control = userHasControl ? "USER" : "ASSISTANT";
  const badge = document.querySelector("#task-status .badge");
  badge.className = `badge status status-${task.status}`;
  badge.dataset.status = task.status;
  badge.textContent = STATUS_LABELS[task.status] || task.status;
  document.title = `${badge.textContent} · ${task.description.slice(0, 60)} · Deskpilot`;
  const prio = document.querySelector("#task-priority .badge");
  prio.className = `badge prio prio-${task.priority}`;
  prio.textContent = task.priority.charAt(0) + task.priority.slice(1).toLowerCase();
  for (const button of document.querySelectorAll("button[data-action]")) {
    button.hidden = !SHOWN[button.dataset.action](task);
  }
  const error = document.getElementById("task-error");
  error.hidden = !task.error;
  error.textContent = task.error || "";
  // The result as the server renders it (resultText, see applyTask).
  const result = document.getElementById("task-result");
  result.hidden = !task.resultText;
  result.textContent = task.resultText || "";
  document.getElementById("reply-label").textContent =
    task.status === STATUS.NEEDS_HELP ? "The agent needs your help: answer it here"
      : task.status === STATUS.NEEDS_REVIEW ? "The agent asks for a review: reply, or mark it complete"
        : "Reply to the agent";
  const hint = document.getElementById("control-hint");
  hint.hidden = finished(task);
  hint.textContent = userHasControl
    ? "You have the mouse and keyboard; the agent waits. Hand back when you are done."
    : "View only. Take over to use the mouse and keyboard yourself; the agent pauses until you hand back.";
  desktop.setViewOnly(!userHasControl);
  // the desktop that runs it (a fleet's, by name): its live view, once a desktop has claimed the task
  const on = document.getElementById("task-desktop");
  on.hidden = !task.executedOn;
  if (task.executedOn) {
    const link = on.querySelector("a");
    link.textContent = task.executedOn;
    link.href = `/desktops/${encodeURIComponent(task.executedOn)}`;
    desktop.setBase(`/desktops/${encodeURIComponent(task.executedOn)}/vnc`);
  }
  showEmpty();
}

function showEmpty() {
  document.getElementById("conversation-empty").hidden = conversation.children.length > 0;
}

// The conversation scrolls inside its box on wide screens, with the page on narrow ones.
const box = document.querySelector(".conversation");

function nearBottom() {
  if (box.scrollHeight > box.clientHeight + 1) return box.scrollHeight - box.scrollTop - box.clientHeight < 120;
  return window.innerHeight + window.scrollY >= document.body.scrollHeight - 120;
}

function scrollToEnd() {
  box.scrollTop = box.scrollHeight;
  window.scrollTo({ top: document.body.scrollHeight });
}

/** Append the messages after the ones shown, rendered by the server; safe to call any time. */
const syncMessages = serialized(async () => {
  const offset = Number(conversation.dataset.count);
  let html;
  try {
    html = await fragment(`/fragments/tasks/${encodeURIComponent(taskId)}/messages?offset=${offset}`);
  } catch (e) {
    if (e.status === 404) taskDeleted(); // deleted meanwhile: its event may come after, or not at all
    else if (e.status !== 502) toast(`Could not load messages: ${e.message}`, "error");
    return;
  }
  const stick = nearBottom();
  const holder = document.createElement("template");
  holder.innerHTML = html;
  const items = [...holder.content.querySelectorAll("li.msg")];
  if (!items.length) return;
  conversation.append(...items);
  conversation.dataset.count = String(offset + items.length);
  localizeTimes(conversation);
  showEmpty();
  if (stick) {
    scrollToEnd();
    // Screenshots take their height once decoded: stay at the end then too.
    for (const img of items.flatMap((li) => [...li.querySelectorAll("img")])) {
      img.addEventListener("load", scrollToEnd, { once: true });
    }
  }
});

/** A task as the agent sends it (an event, a button's answer): its raw result is shown as the server
 * renders it, so a task with a result is fetched again from the state fragment. */
function applyTask(data) {
  if (data.result == null) {
    applyState({ ...data, resultText: "" });
    return;
  }
  applyState(data);
  refreshState();
}

let deleted = false;

/** Said once, whichever tells it first: the task's deletion event, or its messages answering 404. */
function taskDeleted() {
  if (deleted) return;
  deleted = true;
  toast("This task was deleted.", "error");
  for (const b of document.querySelectorAll("button[data-action], #reply button")) b.disabled = true;
}

async function refreshState() {
  try {
    const response = await fetch(`/fragments/tasks/${encodeURIComponent(taskId)}/state`);
    if (response.ok) applyState(await response.json());
  } catch { /* the live light already says the agent is unreachable */ }
}

connectEvents({
  taskId,
  onEvent(event, data) {
    if (!data) return;
    if (event === "task_updated" && data.id === taskId) applyTask(data);
    else if (event === "new_message" && (data.taskId === taskId || data.task_id === taskId)) syncMessages();
    else if (event === "task_deleted" && (data.id === taskId || data === taskId)) taskDeleted();
  },
  onOpen() {
    // Catch up on what happened between the page render (or an outage) and now.
    refreshState();
    syncMessages();
  },
});

// ---------------------------------------------------------------------------------------- buttons

const ACTIONS = {
  complete: () => api("PATCH", `/tasks/${taskId}`, { status: STATUS.COMPLETED }),
  cancel: () => api("PATCH", `/tasks/${taskId}`, { status: STATUS.CANCELLED }),
  rerun: () => api("PATCH", `/tasks/${taskId}`, { status: STATUS.PENDING }),
  takeover: () => api("POST", `/tasks/${taskId}/takeover`),
  resume: () => api("POST", `/tasks/${taskId}/resume`),
  async delete() {
    if (!confirm("Delete this task and its conversation?")) return null;
    await api("DELETE", `/tasks/${taskId}`);
    location.assign("/");
    return null;
  },
};

for (const button of document.querySelectorAll("button[data-action]")) {
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      const updated = await ACTIONS[button.dataset.action]();
      if (updated && updated.id === taskId) applyTask(updated);
    } catch (e) {
      toast(e.message, "error");
    } finally {
      button.disabled = false;
    }
  });
}

// ------------------------------------------------------------------------------------------ reply

const reply = document.getElementById("reply");
reply.content.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) reply.requestSubmit();
});
reply.addEventListener("submit", async (e) => {
  e.preventDefault();
  const content = reply.content.value.trim();
  if (!content) return;
  const send = reply.querySelector("button");
  send.disabled = true;
  try {
    await api("POST", `/tasks/${taskId}/messages`, { content });
    reply.content.value = "";
    syncMessages();
  } catch (err) {
    toast(err.message, "error");
  } finally {
    send.disabled = false;
  }
});

// Screenshots: click to see one at full size, click again to shrink.
conversation.addEventListener("click", (e) => {
  const shot = e.target.closest(".shot");
  if (shot) shot.classList.toggle("zoomed");
});

// Steps: the trajectory, fetched (again) each time the view is opened.
const steps = document.getElementById("steps");
const stepsBody = document.getElementById("steps-body");
steps.addEventListener("toggle", async () => {
  if (!steps.open) return;
  stepsBody.setAttribute("aria-busy", "true");
  try {
    stepsBody.innerHTML = await fragment(steps.dataset.src);
    localizeTimes(stepsBody);
  } catch (e) {
    const notice = document.createElement("p");
    notice.className = "notice error";
    notice.textContent = `Could not load the steps: ${e.message}`;
    stepsBody.replaceChildren(notice);
  } finally {
    stepsBody.removeAttribute("aria-busy");
  }
});
stepsBody.addEventListener("click", (e) => {
  const shot = e.target.closest(".shot");
  if (shot) shot.classList.toggle("zoomed");
});

applyState(task);
scrollToEnd();
window.addEventListener("load", scrollToEnd, { once: true });
