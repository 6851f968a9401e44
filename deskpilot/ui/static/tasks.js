// Task list (live) and the new-task form (drag and drop upload, model, priority, schedule).
import { api, connectEvents, fragment, localizeTimes, serialized, toast } from "./common.js";

// ------------------------------------------------------------------------------------- task list

const table = document.getElementById("task-table");
const rows = document.getElementById("task-rows");

/** Re-render the rows from the server's template; rows not seen before get a short highlight. */
const refreshList = serialized(async () => {
  if (!table) return;
  const params = new URLSearchParams({ filter: table.dataset.filter, offset: table.dataset.offset });
  const known = new Set([...rows.querySelectorAll("tr.task-row")].map((r) => r.dataset.id));
  let html;
  try {
    html = await fragment(`/fragments/tasks?${params}`);
  } catch (e) {
    if (!e.html) return;
    html = e.html; // the agent-down notice, rendered by the server
  }
  rows.innerHTML = html;
  for (const row of rows.querySelectorAll("tr.task-row")) {
    if (known.size && !known.has(row.dataset.id)) row.classList.add("fresh");
  }
  const meta = rows.querySelector("#rows-meta");
  if (meta && !meta.dataset.error) {
    const total = Number(meta.dataset.total);
    document.getElementById("task-count").textContent = `${total} task${total === 1 ? "" : "s"}`;
  }
  localizeTimes(rows);
});

// Task events only: a list has no use for messages, which carry the agent's screenshots.
const TASK_EVENTS = ["task_created", "task_updated", "task_deleted"];
if (table) {
  connectEvents({
    events: TASK_EVENTS,
    onEvent: refreshList,
    // The page was rendered before the socket opened: catch up on anything since (and after outages).
    onOpen: refreshList,
  });
} else {
  connectEvents({ events: TASK_EVENTS, onEvent() {} }); // the status light in the top bar
}

// -------------------------------------------------------------------------------- new-task form

const form = document.getElementById("new-task");
if (form) {
  const input = document.getElementById("files");
  const zone = document.getElementById("dropzone");
  const list = document.getElementById("file-list");
  const later = document.getElementById("later");
  const whenLabel = document.getElementById("when-label");
  const when = document.getElementById("scheduled-for");
  const error = document.getElementById("form-error");
  const button = document.getElementById("create");
  let files = [];

  function showFiles() {
    list.replaceChildren(
      ...files.map((f, i) => {
        const li = document.createElement("li");
        li.textContent = `${f.name} (${formatSize(f.size)}) `;
        const remove = document.createElement("button");
        remove.type = "button";
        remove.className = "link";
        remove.textContent = "remove";
        remove.setAttribute("aria-label", `remove ${f.name}`);
        remove.addEventListener("click", () => { files.splice(i, 1); showFiles(); });
        li.append(remove);
        return li;
      }),
    );
    zone.classList.toggle("has-files", files.length > 0);
  }

  function addFiles(fileList) {
    for (const f of fileList) {
      if (!files.some((g) => g.name === f.name && g.size === f.size)) files.push(f);
    }
    showFiles();
  }

  input.addEventListener("change", () => { addFiles(input.files); input.value = ""; });
  for (const type of ["dragenter", "dragover"]) {
    zone.addEventListener(type, (e) => { e.preventDefault(); zone.classList.add("over"); });
  }
  for (const type of ["dragleave", "drop"]) {
    zone.addEventListener(type, () => zone.classList.remove("over"));
  }
  zone.addEventListener("drop", (e) => {
    e.preventDefault();
    if (e.dataTransfer && e.dataTransfer.files.length) addFiles(e.dataTransfer.files);
  });
  // A file dropped next to the zone must not navigate away from the page.
  window.addEventListener("dragover", (e) => e.preventDefault());
  window.addEventListener("drop", (e) => e.preventDefault());

  later.addEventListener("change", () => {
    whenLabel.hidden = !later.checked;
    if (later.checked && !when.value) {
      const d = new Date(Date.now() + 3600e3);
      d.setSeconds(0, 0);
      when.value = new Date(d.getTime() - d.getTimezoneOffset() * 60e3).toISOString().slice(0, 16);
    }
  });

  form.description.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) form.requestSubmit();
  });

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    error.hidden = true;
    const description = form.description.value.trim();
    if (!description) {
      showError("Describe the task first.");
      form.description.focus();
      return;
    }
    const body = new FormData();
    body.append("description", description);
    body.append("priority", form.priority.value);
    if (form.model.value && !form.model.disabled) body.append("model", form.model.value);
    if (later.checked) {
      const at = new Date(when.value);
      if (!when.value || Number.isNaN(at.getTime())) {
        showError("Pick a date and time, or untick “Run later”.");
        return;
      }
      body.append("type", "SCHEDULED");
      body.append("scheduledFor", at.toISOString());
    } else {
      body.append("type", "IMMEDIATE");
    }
    for (const f of files) body.append("files", f, f.name);

    button.disabled = true;
    button.textContent = "Starting…";
    try {
      const task = await api("POST", "/tasks", body);
      if (form.dataset.after === "open") {
        location.assign(`/tasks/${task.id}`);
        return;
      }
      form.reset();
      files = [];
      showFiles();
      whenLabel.hidden = true;
      toast("Task created.", "ok");
      refreshList(); // the socket event does this too; this covers a socket that is down
    } catch (err) {
      showError(err.message);
    } finally {
      button.disabled = false;
      button.textContent = "Start task";
    }
  });

  function showError(text) {
    error.textContent = text;
    error.hidden = false;
  }
}

function formatSize(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}
