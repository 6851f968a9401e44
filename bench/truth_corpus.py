"""The actions bench/truth.py judges: real steps in the appliance's own applications, as an agent takes them.

``CORPUS`` is a table of (label, group, action): each group starts from a reset desktop, after the unjudged
steps of ``SETUP`` (files, a KeePassXC database), and its actions run in order, each from the screen the
previous one left at rest. ``{home}`` in a text is the sandbox's home directory (a temporary one). A chord is
two actions, ``press_keys`` down then up, as the agent sends it. Coordinates are screen pixels of the
1920x1080 screen (the panel is the bottom 32 rows).
"""

from __future__ import annotations

from typing import Any

Act = dict[str, Any]
Row = tuple[str, str, Act]


def text(s: str) -> Act:
    return {"action": "type_text", "text": s}


def keys(*names: str) -> Act:
    return {"action": "type_keys", "keys": list(names)}


def click(x: int, y: int, count: int = 1, button: str = "left") -> Act:
    return {"action": "click_mouse", "coordinates": {"x": x, "y": y}, "button": button, "clickCount": count}


def scroll(x: int, y: int, direction: str, count: int = 3) -> Act:
    return {"action": "scroll", "coordinates": {"x": x, "y": y}, "direction": direction, "scrollCount": count}


def app(name: str) -> Act:
    return {"action": "application", "application": name}


def paste(s: str) -> Act:
    return {"action": "paste_text", "text": s}


def chord(label: str, group: str, *names: str) -> list[Row]:
    """A key combination as the agent presses it: two actions, keys down then up."""
    return [
        (f"{label} (down)", group, {"action": "press_keys", "keys": list(names), "press": "down"}),
        (f"{label} (up)", group, {"action": "press_keys", "keys": list(names), "press": "up"}),
    ]


def write(path: str, content: str) -> Act:
    """Not judged: a file written before the group (``content`` is base64-encoded once ``{home}`` is set)."""
    return {"action": "write_file", "path": path, "content": content}


def shell(command: str) -> Act:
    """Not an action: ``POST /command`` as the desktop user (setup only)."""
    return {"action": "command", "command": command}


NOTES = "alpha\nbravo\ncharlie\ndelta\n"
PAGE_ONE = """<!doctype html><html><head><meta charset="utf-8"><title>Truth one</title><style>
body{font:28px sans-serif;margin:0;background:#fff}
#title{position:absolute;left:60px;top:20px;margin:0}
#next{position:absolute;left:60px;top:140px;font-size:36px}
#later{position:absolute;left:60px;top:260px;font-size:32px;width:360px;height:70px}
#out{position:absolute;left:60px;top:360px;margin:0}
#long{position:absolute;left:60px;top:460px;width:800px;height:4000px;
  background:repeating-linear-gradient(#fff 0 200px,#def 200px 400px)}
</style></head><body>
<h1 id="title">Page one</h1>
<a id="next" href="page2.html">Go to page two</a>
<button id="later" onclick="later()">Show in 300 ms</button>
<p id="out">nothing yet</p>
<div id="long"></div>
<script>
var n = 0;
function later() {
  setTimeout(function() { document.getElementById("out").textContent = "clicked " + ++n; }, 300);
}
</script>
</body></html>
"""
PAGE_TWO = """<!doctype html><html><head><meta charset="utf-8"><title>Truth two</title><style>
body{font:28px sans-serif;margin:0;background:#ffe}
#title{position:absolute;left:60px;top:20px;margin:0}
#back{position:absolute;left:60px;top:140px;font-size:36px}
#field{position:absolute;left:60px;top:260px;font-size:28px;width:600px}
</style></head><body>
<h1 id="title">Page two</h1>
<a id="back" href="page1.html">Back to page one</a>
<input id="field" value="">
</body></html>
"""
KEEPASS_PASSWORD = "truth-bench-pw"
KEEPASS_DB = "{home}/Documents/bench.kdbx"
# KeePassXC 2.7 opens the databases it had open (its "local" settings, under ~/.cache) at start: the
# unlock screen of this one
KEEPASS_CONFIG = """[General]
ConfigVersion=2
OpenPreviousDatabasesOnStartup=true
UpdateCheckMessageShown=true

[GUI]
CheckForUpdates=false
"""
KEEPASS_LOCAL = f"""[General]
LastOpenedDatabases={KEEPASS_DB}
LastActiveDatabase={KEEPASS_DB}
LastDatabases={KEEPASS_DB}
"""

SETUP: dict[str, list[Act]] = {
    "terminal": [
        write("notes.txt", NOTES),
        write("script.py", "import time\ntime.sleep(0.4)\nprint('slow output')\n"),
    ],
    "geany": [write("draft.txt", "first line\nsecond line\n")],
    "thunar": [
        write("~/Documents/report.txt", "report\n"),
        write("~/Documents/projects/readme.md", "# readme\n"),
        write("~/Documents/projects/src/main.py", "print('hi')\n"),
    ],
    "browser": [write("page1.html", PAGE_ONE), write("page2.html", PAGE_TWO)],
    "keepass": [
        shell(
            f"printf '%s\\n%s\\n' {KEEPASS_PASSWORD} {KEEPASS_PASSWORD}"
            " | keepassxc-cli db-create -q -t 300 -p ~/Documents/bench.kdbx"
        ),
        write("~/.config/keepassxc/keepassxc.ini", KEEPASS_CONFIG),
        write("~/.cache/keepassxc/keepassxc.ini", KEEPASS_LOCAL),
    ],
}

TERM = "terminal"
GEANY = "geany"
THUNAR = "thunar"
WEB = "browser"
KEEPASS = "keepass"
MAIL = "email"
LAUNCH = "launch"

CORPUS: list[Row] = [
    # ---------------------------------------------------------------- xfce4-terminal: typing and commands
    ("launch terminal", TERM, app("terminal")),
    ("echo hello", TERM, text("echo hello\n")),
    ("ls", TERM, text("ls\n")),
    ("ls -l Desktop", TERM, text("ls -l Desktop\n")),
    ("cat notes.txt", TERM, text("cat Desktop/notes.txt\n")),
    ("type a partial command", TERM, text("echo partial")),
    ("enter", TERM, keys("enter")),
    ("python3 slow script", TERM, text("python3 Desktop/script.py\n")),
    ("python3 -c sum", TERM, text("python3 -c 'print(sum(range(10**6)))'\n")),
    ("clear", TERM, text("clear\n")),
    ("seq 1 60 (scrolls)", TERM, text("seq 1 60\n")),
    ("wc -l notes.txt", TERM, text("wc -l Desktop/notes.txt\n")),
    ("type then backspace x3", TERM, text("echo abc")),
    ("backspace x3", TERM, keys("backspace", "backspace", "backspace")),
    ("finish line", TERM, text("xyz\n")),
    *chord("ctrl+c on a partial line", TERM, "ctrl", "c"),
    ("history recall (up)", TERM, keys("up")),
    ("run recalled", TERM, keys("enter")),
    ("loop with sleeps", TERM, text("for i in 1 2 3; do echo step $i; sleep 0.1; done\n")),
    ("long line wraps", TERM, text("python3 -c 'print(\"=\" * 400)'\n")),
    ("sleep then echo", TERM, text("sleep 0.3; echo done\n")),
    ("paste a command", TERM, paste("echo pasted\n")),
    ("printf table", TERM, text("printf '%-8s%s\\n' a 1 b 2 c 3\n")),
    ("scroll up", TERM, scroll(960, 500, "up", 5)),
    ("scroll down", TERM, scroll(960, 500, "down", 5)),
    *chord("clear with ctrl+l", TERM, "ctrl", "l"),
    ("cd Desktop", TERM, text("cd Desktop\n")),
    ("pwd", TERM, text("pwd\n")),
    ("grep", TERM, text("grep -n a notes.txt\n")),
    ("open the File menu", TERM, click(20, 40)),
    ("close the menu (Escape)", TERM, keys("esc")),
    *chord("new tab", TERM, "ctrl", "shift", "t"),
    ("echo in the new tab", TERM, text("echo second tab\n")),
    *chord("close the tab", TERM, "ctrl", "shift", "w"),
    ("echo back in the first tab", TERM, text("echo first tab\n")),
    ("exit closes the terminal", TERM, text("exit\n")),
    # ---------------------------------------------------------------- Geany: typing, menus, documents
    ("launch geany", GEANY, app("code_editor")),
    ("type a function", GEANY, text("def double(x):\n    return 2 * x\n")),
    ("type a comment", GEANY, text("# a comment line\n")),
    ("open File menu", GEANY, click(20, 36)),
    ("close menu (Escape)", GEANY, keys("esc")),
    ("open Edit menu", GEANY, click(58, 36)),
    ("close Edit menu", GEANY, keys("esc")),
    ("open View menu", GEANY, click(162, 36)),
    ("close View menu", GEANY, keys("esc")),
    ("open Search menu", GEANY, click(110, 36)),
    (
        "Search menu to Document menu (hover)",
        GEANY,
        {"action": "move_mouse", "coordinates": {"x": 229, "y": 36}},
    ),
    ("close Document menu", GEANY, keys("esc")),
    *chord("select all", GEANY, "ctrl", "a"),
    ("type over the selection", GEANY, text("replaced\n")),
    *chord("undo", GEANY, "ctrl", "z"),
    ("arrow keys", GEANY, keys("up", "up", "end")),
    ("home", GEANY, keys("home")),
    *chord("new document", GEANY, "ctrl", "n"),
    ("type in the new document", GEANY, text("new document text")),
    ("click in the text", GEANY, click(700, 200)),
    *chord("find (ctrl+f)", GEANY, "ctrl", "f"),
    ("type a search", GEANY, text("doc")),
    ("close find (Escape)", GEANY, keys("esc")),
    ("scroll the editor", GEANY, scroll(900, 500, "down", 3)),
    ("open Help menu", GEANY, click(451, 36)),
    ("close Help menu", GEANY, keys("esc")),
    *chord("quit (ctrl+q)", GEANY, "ctrl", "q"),
    # ---------------------------------------------------------------- Thunar: navigation
    ("launch thunar", THUNAR, app("directory")),
    ("double-click Documents", THUNAR, click(308, 135, 2)),
    ("double-click projects", THUNAR, click(218, 135, 2)),
    ("backspace (back)", THUNAR, keys("backspace")),
    *chord("alt+Up (parent)", THUNAR, "alt", "up"),
    *chord("location bar (ctrl+l)", THUNAR, "ctrl", "l"),
    ("type a path", THUNAR, text("{home}/Documents/projects/src\n")),
    ("select a file", THUNAR, click(218, 135)),
    *chord("back (alt+Left)", THUNAR, "alt", "left"),
    *chord("forward (alt+Right)", THUNAR, "alt", "right"),
    ("open View menu", THUNAR, click(102, 36)),
    ("close View menu", THUNAR, keys("esc")),
    *chord("show hidden (ctrl+h)", THUNAR, "ctrl", "h"),
    *chord("hide hidden (ctrl+h)", THUNAR, "ctrl", "h"),
    *chord("list view (ctrl+2)", THUNAR, "ctrl", "2"),
    *chord("icon view (ctrl+1)", THUNAR, "ctrl", "1"),
    ("sidebar: Desktop", THUNAR, click(70, 157)),
    ("sidebar: home", THUNAR, click(60, 131)),
    ("right-click empty space", THUNAR, click(1000, 600, 1, "right")),
    ("close context menu", THUNAR, keys("esc")),
    *chord("close (ctrl+q)", THUNAR, "ctrl", "q"),
    # ---------------------------------------------------------------- Firefox: a local page and a link
    ("launch firefox", WEB, app("browser")),
    *chord("focus the address bar", WEB, "ctrl", "l"),
    ("type the page's URL", WEB, text("file://{home}/Desktop/page1.html")),
    ("enter loads the page", WEB, keys("enter")),
    ("follow the link", WEB, click(200, 272)),
    ("click the text field", WEB, click(400, 392)),
    ("type in the field", WEB, text("typed into a page")),
    *chord("back (alt+Left)", WEB, "alt", "left"),
    ("click the delayed button", WEB, click(240, 405)),
    ("scroll down", WEB, scroll(900, 700, "down", 5)),
    ("scroll up", WEB, scroll(900, 700, "up", 5)),
    *chord("zoom in", WEB, "ctrl", "plus"),
    *chord("zoom reset", WEB, "ctrl", "0"),
    *chord("forward (alt+Right)", WEB, "alt", "right"),
    *chord("reload (F5)", WEB, "f5"),
    *chord("new tab", WEB, "ctrl", "t"),
    *chord("close tab", WEB, "ctrl", "w"),
    ("follow the link back", WEB, click(200, 272)),
    *chord("quit (ctrl+q)", WEB, "ctrl", "q"),
    # ---------------------------------------------------------------- KeePassXC: unlock a database
    ("launch keepassxc (unlock screen)", KEEPASS, app("password_manager")),
    ("type the password", KEEPASS, text(KEEPASS_PASSWORD)),
    ("enter unlocks", KEEPASS, keys("enter")),
    ("open Database menu", KEEPASS, click(38, 36)),
    ("close the menu", KEEPASS, keys("esc")),
    *chord("lock (ctrl+l)", KEEPASS, "ctrl", "l"),
    ("type the password again", KEEPASS, text(KEEPASS_PASSWORD)),
    ("enter unlocks again", KEEPASS, keys("enter")),
    *chord("quit (ctrl+q)", KEEPASS, "ctrl", "q"),
    # ---------------------------------------------------------------- Thunderbird: launch and quit
    ("launch thunderbird", MAIL, app("email_client")),
    *chord("quit thunderbird (ctrl+q)", MAIL, "ctrl", "q"),
    # ---------------------------------------------------------------- every application: launch and close
    ("show the desktop (empty)", LAUNCH, app("desktop")),
    ("launch terminal", LAUNCH, app("terminal")),
    *chord("close terminal (alt+F4)", LAUNCH, "alt", "f4"),
    ("launch geany", LAUNCH, app("code_editor")),
    *chord("close geany (alt+F4)", LAUNCH, "alt", "f4"),
    ("launch thunar", LAUNCH, app("directory")),
    *chord("close thunar (alt+F4)", LAUNCH, "alt", "f4"),
    ("launch keepassxc", LAUNCH, app("password_manager")),
    *chord("close keepassxc (ctrl+q)", LAUNCH, "ctrl", "q"),
    ("launch firefox", LAUNCH, app("browser")),
    *chord("close firefox (alt+F4)", LAUNCH, "alt", "f4"),
    ("launch thunderbird", LAUNCH, app("email_client")),
    *chord("close thunderbird (alt+F4)", LAUNCH, "alt", "f4"),
    ("launch terminal again", LAUNCH, app("terminal")),
    ("show the desktop over it", LAUNCH, app("desktop")),
    ("bring the terminal back", LAUNCH, app("terminal")),
]
