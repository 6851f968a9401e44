// One desktop of the fleet: its live view, view only until you take the desktop over (it then claims no new
// task, POST /desktops/{name}/takeover) and interactive until you hand it back (/resume).
import { api, toast } from "./common.js";
import { startDesktop } from "./desktop.js";

const page = document.getElementById("desktop-page");
const name = page.dataset.name;
const screen = document.getElementById("screen");
const view = startDesktop(screen, document.getElementById("desktop-state"), screen.dataset.base);

function show(desktop) {
  const taken = desktop.takenOver;
  page.dataset.takenOver = String(taken);
  document.querySelector('[data-action="takeover"]').hidden = taken;
  document.querySelector('[data-action="resume"]').hidden = !taken;
  const state = document.getElementById("fleet-state");
  state.className = `badge desktop-state-${desktop.state}`;
  state.textContent = desktop.state.replace("_", " ").replace(/\b\w/g, (c) => c.toUpperCase());
  view.setViewOnly(!taken);
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
