"""A tiny Tk program the desktop tests drive: one Text widget on a coloured window.

It writes its state as JSON to OUT (atomically, whenever it changes): the text, the selected text, whether
the window has the keyboard focus, the mouse buttons pressed on it, and every button and key press with the
modifier state X delivered it with ([button or keysym number, state]; Shift 1, Control 4, Mod1/Alt 8).

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
# a steady caret, as the appliance configures its applications: a blink would be a drawing of its own
text = tk.Text(
    root, bg=colour, fg="black", highlightthickness=0, bd=0, font=("DejaVu Sans Mono", 14), insertofftime=0
)
text.pack(fill="both", expand=True, padx=20, pady=20)
text.insert("1.0", initial)
text.mark_set("insert", "end")
text.focus_set()
buttons: list[int] = []
clicks: list[list[int]] = []
keys: list[list[int]] = []


def button(e: tk.Event) -> None:
    buttons.append(e.num)
    clicks.append([e.num, int(e.state)])


root.bind_all("<Button>", button)
# recorded before the Text widget's own bindings, which may stop a key from propagating
text.bindtags(("Record", *text.bindtags()))
root.bind_class("Record", "<KeyPress>", lambda e: keys.append([e.keysym_num, int(e.state)]))
last = None


def dump() -> None:
    global last
    ranges = text.tag_ranges("sel")
    state = {
        "text": text.get("1.0", "end-1c"),
        "sel": text.get(*ranges) if ranges else "",
        "focus": root.focus_get() is not None,
        "buttons": buttons,
        "clicks": clicks,
        "keys": keys,
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
