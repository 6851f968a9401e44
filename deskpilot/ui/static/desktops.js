// Fleet page: the desktops' rows, fresh on every task event (a desktop starts or finishes a task) and every
// few seconds (heartbeats are not events).
import { connectEvents, fragment, localizeTimes, toast } from "./common.js";

const rows = document.getElementById("desktop-rows");
const REFRESH_MS = 5000;

async function refresh() {
  try {
    rows.innerHTML = await fragment("/fragments/desktops");
    const n = rows.querySelectorAll("tr[data-desktop]").length;
    document.getElementById("desktop-count").textContent = `${n} desktop${n === 1 ? "" : "s"}`;
    localizeTimes(rows);
  } catch (e) {
    toast(e.message, "error");
  }
}

localizeTimes(document);
connectEvents({ events: ["task_created", "task_updated", "task_deleted"], onEvent: refresh, onOpen: refresh });
setInterval(refresh, REFRESH_MS);
