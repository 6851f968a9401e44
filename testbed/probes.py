"""Scripts an attacker's process would run inside the appliance (as the desktop user, `nobody` ...), for the
least-privilege tests of the native appliance and of the image. Each runs with the system's python3 and
prints one JSON object."""

from __future__ import annotations

# connect to x11vnc's Unix socket (argv[1]) and read its greeting
RFB = """
import json, socket, sys
try:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(3)
    s.connect(sys.argv[1])
    print(json.dumps({"connected": True, "greeting": s.recv(12).decode(errors="replace")}))
except OSError as e:
    print(json.dumps({"connected": False, "error": e.strerror}))
"""

# which of the TCP ports argv[1:] on loopback greet as an RFB (VNC) server
TCP_RFB = """
import json, socket, sys
greetings = []
for port in map(int, sys.argv[1:]):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.settimeout(2)
            data = s.recv(12)
            if data.startswith(b"RFB"):
                greetings.append(port)
    except OSError:
        pass
print(json.dumps({"rfb": greetings}))
"""

# for each pid of argv[1:]: kill -0, PTRACE_ATTACH, open /proc/<pid>/mem and environ (errno name or "allowed")
REACH = """
import ctypes, errno, json, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
out = {}
for pid in map(int, sys.argv[1:]):
    r = {}
    try:
        os.kill(pid, 0)
        r["signal"] = "allowed"
    except OSError as e:
        r["signal"] = errno.errorcode[e.errno]
    if libc.ptrace(16, pid, None, None) == 0:  # PTRACE_ATTACH
        r["ptrace"] = "allowed"
        libc.ptrace(17, pid, None, None)  # PTRACE_DETACH
    else:
        r["ptrace"] = errno.errorcode[ctypes.get_errno()]
    for name in ("mem", "environ"):
        try:
            open(f"/proc/{pid}/{name}", "rb").close()
            r[name] = "allowed"
        except OSError as e:
            r[name] = errno.errorcode[e.errno]
    out[pid] = r
print(json.dumps(out))
"""

# bind the loopback TCP port argv[1]
BIND = """
import json, socket, sys
try:
    s = socket.socket()
    s.bind(("127.0.0.1", int(sys.argv[1])))
    s.listen()
    print(json.dumps({"bound": True}))
except OSError as e:
    print(json.dumps({"bound": False, "error": e.strerror}))
"""

# send the desktop user's worker on argv[1] a command request, as the desktop service would
HANDS = """
import json, socket, struct, sys
header = json.dumps({"op": "command", "request": {"command": "id", "timeout": 5}, "size": 0}).encode()
try:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(sys.argv[1])
    s.sendall(struct.pack(">I", len(header)) + header)
    print(json.dumps({"answer": s.recv(4096).decode(errors="replace")}))
except OSError as e:
    print(json.dumps({"error": e.strerror}))
"""
