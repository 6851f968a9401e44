// One desktop of the fleet: its live view, view only until you take the desktop over (it then claims no new
// task, POST /desktops/{name}/takeover) and interactive until you hand it back (/resume). Its state and task
// follow the task service's events (a task starts or ends on it) and a refresh every few seconds (heartbeats
// and take-overs elsewhere are no events), as the fleet page's rows do.
import { api, connectEvents, toast } from "./common.js";
import { startDesktop } from "./desktop.js";

const page = document.getElementById("desktop-page");
const name = page.dataset.name;
const screen = document.getElementById("screen");
const view = startDesktop(screen, document.getElementById("desktop-state"), screen.dataset.base);
const REFRESH_MS = 5000;

function show(desktop) {
  const taken = desktop.takenOver;
  page.dataset.takenOver = String(taken);
  document.querySelector('[data-action="takeover"]').hidden = taken;
  document.querySelector('[data-action="resume"]').hidden = !taken;
  const state = document.getElementById("fleet-state");
  state.className = `badge desktop-state-${desktop.state}`;
  state.textContent = desktop.state.replace("_", " ").replace(/\b\w/g, (c) => c.toUpperCase());
  const task = document.getElementById("desktop-task");
  task.hidden = !desktop.task;
  if (desktop.task) {
    const link = task.querySelector("a");
    link.href = `/tasks/${encodeURIComponent(desktop.task.id)}`;
    link.textContent = desktop.task.description.slice(0, 60);
  }
  view.setViewOnly(!taken);
}

async function refresh() {
  try {
    const desktop = (await api("GET", "/desktops")).find((d) => d.name === name);
    if (desktop) show(desktop);
  } catch {
    // the agent is away: the live indicator says so, and the next refresh catches up
  }
}

for (const action of ["takeover", "resume"]) {
  document.querySelector(`[data-action="${action}"]`).addEventListener("click", async () => {
    try {
      show(await api("POST", `/desktops/${encodeURIComponent(name)}/${action}`));
    } catch (e) {
      toast(e.message, "error");
    }
  });
}
view.setViewOnly(page.dataset.takenOver !== "true");
connectEvents({ events: ["task_created", "task_updated", "task_deleted"], onEvent: refresh, onOpen: refresh });
setInterval(refresh, REFRESH_MS);
