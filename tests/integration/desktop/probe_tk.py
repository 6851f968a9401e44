"""A tiny Tk program the desktop tests drive: one Text widget on a coloured window.

It writes its state as JSON to OUT (atomically, whenever it changes): the text, the selected text, whether
the window has the keyboard focus, and the mouse buttons pressed on it.

    python probe_tk.py OUT TITLE GEOMETRY COLOUR [INITIAL_TEXT]
"""

import json
import os
import sys
import tkinter as tk

out, title, geometry, colour = sys.argv[1:5]
initial = sys.argv[5] if len(sys.argv) > 5 else ""

root = tk.Tk(className="DeskpilotProbe")
root.title(title)
root.geometry(geometry)
root.configure(bg=colour)
text = tk.Text(root, bg=colour, fg="black", highlightthickness=0, bd=0, font=("DejaVu Sans Mono", 14))
text.pack(fill="both", expand=True, padx=20, pady=20)
text.insert("1.0", initial)
text.mark_set("insert", "end")
text.focus_set()
buttons: list[int] = []
root.bind_all("<Button>", lambda e: buttons.append(e.num))
last = None


def dump() -> None:
    global last
    ranges = text.tag_ranges("sel")
    state = {
        "text": text.get("1.0", "end-1c"),
        "sel": text.get(*ranges) if ranges else "",
        "focus": root.focus_get() is not None,
        "buttons": buttons,
    }
    blob = json.dumps(state)
    if blob != last:
        with open(out + ".tmp", "w") as f:
            f.write(blob)
        os.replace(out + ".tmp", out)
        last = blob
    root.after(20, dump)


dump()
root.mainloop()
