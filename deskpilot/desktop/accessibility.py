"""The ``accessibility`` action's tree and the ``element`` of the input actions, read over AT-SPI
(``atspi.py``) where the desktop user's rights are (the ``hands`` worker).

A tree is read breadth first, one level at a time, every call of a level in flight at once (see atspi.py),
the bounds of a level's nodes that are showing asked with the next level's calls, cut at ``MAX_NODES``
nodes and ``maxDepth`` levels; the text of text roles is read last, each cut at
``MAX_TEXT`` characters (a terminal's last ones: its prompt is at the end) and all of them at
``MAX_TEXT_TOTAL``. ``capped`` names the limits a tree hit. ``interactiveOnly`` and ``within`` leave out the
nodes they do not keep and lift their children into the nearest kept ancestor, so nothing kept is lost.
"""

from __future__ import annotations

import hashlib
import os
from typing import TYPE_CHECKING, Any, TypeGuard

from deskpilot.desktop.atspi import (
    ACCESSIBLE,
    COMPONENT,
    MAX_NODES,
    MAX_TEXT,
    REGISTRY,
    ROOT,
    TEXT,
    TEXT_ROLES,
    Atspi,
    CallFailed,
    Query,
    Ref,
    Walk,
    element_id,
    interactive,
    parse_id,
    state_names,
)
from deskpilot.desktop.dbus_wire import Call
from deskpilot.errors import InvalidAction

if TYPE_CHECKING:
    from dbus_fast import Variant

PROPERTIES = "org.freedesktop.DBus.Properties"
NULL_PATH = "/org/a11y/atspi/null"  # a reference to nothing
COLLECTION = "org.a11y.atspi.Collection"
# AT-SPI's MatchRule (atspi-matchrule.c): the state "focused" (bit 12), every criterion matched ALL (1), not
# inverted; asked with canonical order (1; 0, "invalid", finds nothing), one match, traversing the subtree
FOCUSED_RULE: tuple[Any, ...] = ([1 << 12, 0], 1, {}, 1, [], 1, [], 1, False)
TEXT_HEAD = 32_768  # characters of a text that textChanged compares: its head and its tail (a terminal's end)
TEXT_TAIL = 32_768
DIGEST_KEY = os.urandom(16)  # a text's digest (a password field's too) means nothing outside this process
NO_TEXT = (
    "\ufffc"  # the object replacement character: where a child (a link, an image) sits in its parent's text
)


async def read_tree(atspi: Atspi, query: Query) -> dict[str, Any]:
    """``{"root": Node | None, "nodes": n, "capped": [...], "limits": {...}}`` (docs/desktop-api.md)."""
    limits = {"maxNodes": MAX_NODES, "maxText": MAX_TEXT}
    key = (query.pid, query.title)
    last = atspi.window
    if query.window == "all":
        root: Ref | None = (REGISTRY, ROOT)
    elif last is not None and last[0] == key and (walk := await _walk(atspi, query, last[1], True)):
        return _tree(walk, last[1], limits)
    else:
        atspi.window = None
        root = await focused_window(atspi, query)
    if root is None:
        note = "the focused window's application exposes no accessibility tree (or no window has the focus)"
        return {"root": None, "nodes": 0, "capped": [], "limits": limits, "message": note}
    walk = await _walk(atspi, query, root, False)
    assert walk is not None  # only a confirmed walk gives up
    if query.window != "all" and _active(walk, root):
        atspi.window = key, root
    return _tree(walk, root, limits)


async def _walk(atspi: Atspi, query: Query, root: Ref, confirm: bool) -> Walk | None:
    """The tree under ``root``, level by level; with ``confirm``, None when its first level shows that the
    window is no longer the active one (or gone)."""
    walk = Walk(query)
    level, depth = [root], 1
    while level:
        expand = depth < query.max_depth
        answers = await _read_level(atspi, walk, level, expand)
        if confirm and depth == 1 and not _active(walk, root):
            return None
        following: list[Ref] = []
        for ref, kids in zip(level, answers, strict=True):
            room = MAX_NODES - len(walk.nodes) - len(following)
            if len(kids) > room:
                kids = kids[: max(room, 0)]
                walk.capped.add("nodes")
            walk.children[ref] = kids
            following += kids
        level, depth = following, depth + 1
    await _read_texts(atspi, walk)
    return walk


def _active(walk: Walk, root: Ref) -> bool:
    """Whether the window read at ``root`` says it is the active one."""
    return "active" in walk.nodes.get(root, {}).get("states", ())


def _tree(walk: Walk, root: Ref, limits: dict[str, int]) -> dict[str, Any]:
    kept = _assemble(walk, root, top=True)
    return {
        "root": kept[0] if kept else None,
        "nodes": _count(kept),
        "capped": sorted(walk.capped),
        "limits": limits,
    }


def _variant(value: object) -> TypeGuard[Variant]:
    """A D-Bus variant (dbus-fast imported here, in the worker that speaks to the bus, not at import)."""
    from dbus_fast import Variant

    return isinstance(value, Variant)


def _node_calls(ref: Ref, expand: bool) -> list[Call]:
    calls: list[Call] = [
        (ref, ACCESSIBLE, "GetRoleName", "", ()),
        (ref, ACCESSIBLE, "GetState", "", ()),
        (ref, PROPERTIES, "Get", "ss", (ACCESSIBLE, "Name")),
    ]
    if expand:
        return [*calls, (ref, ACCESSIBLE, "GetChildren", "", ())]
    return [*calls, (ref, PROPERTIES, "Get", "ss", (ACCESSIBLE, "ChildCount"))]  # only: is it cut here?


def _extents(refs: list[Ref]) -> list[Call]:
    return [(ref, COMPONENT, "GetExtents", "u", (0,)) for ref in refs]  # 0: screen coordinates


def _lengths(refs: list[Ref]) -> list[Call]:
    return [(ref, PROPERTIES, "Get", "ss", (TEXT, "CharacterCount")) for ref in refs]


def _measure(walk: Walk, refs: list[Ref], answers: list[Any]) -> None:
    for ref, count in zip(refs, answers, strict=True):
        walk.lengths[ref] = int(count.value) if _variant(count) else 0


def _place(walk: Walk, refs: list[Ref], answers: list[Any]) -> None:
    for ref, extents in zip(refs, answers, strict=True):
        walk.nodes[ref]["bounds"] = _bounds(extents)


async def _read_level(atspi: Atspi, walk: Walk, level: list[Ref], expand: bool) -> list[list[Ref]]:
    """Each node's role, states and name (and its children's references when ``expand``), all asked in one
    burst, with the bounds of the previous level's nodes that are showing; a node gone meanwhile is left
    out. The children of each node, in order.

    Bounds are asked only of what is showing (a tenth of Geany's nodes: its menus' items are not), and a
    level later, when the states say so: most calls of a walk were extents of nothing on the screen."""
    per = len(_node_calls(level[0], expand))
    placing, walk.unplaced = walk.unplaced, []
    counting, walk.uncounted = walk.uncounted, []
    asked = [call for ref in level for call in _node_calls(ref, expand)]
    answers = await atspi.batch([*asked, *_extents(placing), *_lengths(counting)])
    _place(walk, placing, answers[len(asked) : len(asked) + len(placing)])
    _measure(walk, counting, answers[len(asked) + len(placing) :])
    out: list[list[Ref]] = []
    for index, ref in enumerate(level):
        role, states, name, *children = answers[index * per : (index + 1) * per]
        if isinstance(role, CallFailed) or isinstance(states, CallFailed):
            out.append([])
            continue
        walk.nodes[ref] = {
            "id": element_id(ref),
            "role": str(role),
            "name": name.value if _variant(name) else "",
            "states": state_names(states),
            "bounds": None,
        }
        if "showing" in walk.nodes[ref]["states"]:
            walk.unplaced.append(ref)
        if walk.nodes[ref]["role"] in TEXT_ROLES:
            walk.uncounted.append(ref)
        if not expand and _variant(children[0]) and children[0].value:
            walk.capped.add("depth")
        kids = children[0] if isinstance(children[0], list) else []
        out.append([(str(bus), str(path)) for bus, path in kids if bus and path != NULL_PATH])
    return out


def _bounds(extents: object) -> dict[str, int] | None:
    if not isinstance(extents, list | tuple) or len(extents) != 4:
        return None
    x, y, width, height = (int(v) for v in extents)
    if width <= 0 or height <= 0 or x < -(1 << 20) or y < -(1 << 20):
        return None  # not on the screen (an object without a place, or a toolkit's "unknown")
    return {"x": x, "y": y, "width": width, "height": height}


async def _read_texts(atspi: Atspi, walk: Walk) -> None:
    """The text of the text roles, in tree order, within the caps. Their lengths were asked with the level
    after theirs; the last level's go with its bounds, and the texts in a burst of their own (with those
    bounds when no length was left to ask)."""
    placing, counting = walk.unplaced, walk.uncounted
    if counting:
        answers = await atspi.batch([*_extents(placing), *_lengths(counting)])
        _place(walk, placing, answers[: len(placing)])
        _measure(walk, counting, answers[len(placing) :])
        placing = []
    refs = [ref for ref, node in walk.nodes.items() if node["role"] in TEXT_ROLES]
    spans: list[tuple[Ref, int, int]] = []
    for ref in refs:
        length = walk.lengths.get(ref, 0)
        take = min(length, MAX_TEXT, walk.text_left)
        if take < length:
            walk.capped.add("text")
        walk.text_left -= take
        start = length - take if walk.nodes[ref]["role"] == "terminal" else 0  # a terminal's end is news
        walk.nodes[ref]["text"] = ""
        if take:
            spans.append((ref, start, start + take))
    asked = [(ref, TEXT, "GetText", "ii", (start, end)) for ref, start, end in spans]
    answers = await atspi.batch([*asked, *_extents(placing)])
    texts = answers[: len(asked)]
    _place(walk, placing, answers[len(asked) :])
    for (ref, _, _), text in zip(spans, texts, strict=True):
        if isinstance(text, str):
            walk.nodes[ref]["text"] = text.replace(NO_TEXT, "")


def _keep(walk: Walk, node: dict[str, Any]) -> bool:
    query = walk.query
    if query.interactive_only and not interactive(node):
        return False
    if query.within is None:
        return True
    box = node["bounds"]
    if box is None:
        return False
    x, y, width, height = query.within
    across = box["x"] < x + width and x < box["x"] + box["width"]
    return bool(across and box["y"] < y + height and y < box["y"] + box["height"])


def _assemble(walk: Walk, ref: Ref, top: bool = False) -> list[dict[str, Any]]:
    """The node at ``ref`` with its children, or, when a filter leaves it out, its kept descendants."""
    node = walk.nodes.get(ref)
    if node is None:
        return []
    kids = [kept for child in walk.children.get(ref, []) for kept in _assemble(walk, child)]
    if top or _keep(walk, node):
        return [{**node, "children": kids}]
    return kids


def _count(nodes: list[dict[str, Any]]) -> int:
    return sum(1 + _count(node["children"]) for node in nodes)


async def focused_window(atspi: Atspi, query: Query) -> Ref | None:
    """The top-level of the application whose process owns the X active window (``query.pid``): the one
    AT-SPI says is active, else the one titled as the X window; else any application's active top-level."""
    apps = await atspi.applications()
    pids = [await atspi.pid(bus) for bus, _ in apps]  # asked once per application (cached)
    owners = [app for app, pid in zip(apps, pids, strict=True) if query.pid and pid == query.pid]
    for candidates in (owners, apps):
        windows = await _toplevels(atspi, candidates)
        found = next((ref for ref, states, _ in windows if "active" in states), None)
        found = found or next((ref for ref, _, name in windows if query.title and name == query.title), None)
        if found is not None:
            return found
    return None


async def _toplevels(atspi: Atspi, apps: list[Ref]) -> list[tuple[Ref, list[str], str]]:
    """The top-level windows of ``apps``: (reference, states, name)."""
    lists = await atspi.batch([(app, ACCESSIBLE, "GetChildren", "", ()) for app in apps])
    refs = [(str(bus), str(path)) for kids in lists if isinstance(kids, list) for bus, path in kids]
    asked: list[Call] = [(ref, ACCESSIBLE, "GetState", "", ()) for ref in refs]
    asked += [(ref, PROPERTIES, "Get", "ss", (ACCESSIBLE, "Name")) for ref in refs]
    answers = await atspi.batch(asked)
    states, names = answers[: len(refs)], answers[len(refs) :]
    return [
        (ref, state_names(bits), name.value if _variant(name) else "")
        for ref, bits, name in zip(refs, states, names, strict=True)
        if isinstance(bits, list)
    ]


async def element(atspi: Atspi, element: str) -> dict[str, Any]:
    """A live element's ``bounds`` (screen pixels) and ``states``; 400 once it is gone or off the screen."""
    ref = parse_id(element)
    states, extents = await atspi.batch(
        [(ref, ACCESSIBLE, "GetState", "", ()), (ref, COMPONENT, "GetExtents", "u", (0,))]
    )
    if isinstance(states, CallFailed) or "defunct" in state_names(states):
        raise InvalidAction(
            f"element {element} is gone (its window closed, or its application replaced it): "
            "ask accessibility for a fresh tree"
        )
    names, box = state_names(states), _bounds(extents)
    if box is None or "showing" not in names:
        raise InvalidAction(f"element {element} is not on the screen now (it is hidden or has no bounds)")
    return {"bounds": box, "states": names}


async def focus(atspi: Atspi, element: str) -> bool:
    """Give ``element`` the keyboard focus (AT-SPI's GrabFocus); whether its application did."""
    (done,) = await atspi.batch([(parse_id(element), COMPONENT, "GrabFocus", "", ())])
    return done is True


async def focused_text(atspi: Atspi, pid: int) -> dict[str, Any] | None:
    """The text element that has the keyboard focus in the application of process ``pid``, as
    ``text_state`` tells it; None when the focus is elsewhere (a button), or the application keeps it from
    AT-SPI's Collection (Qt's bridge has none): textChanged is then absent, not guessed."""
    owner = [app for app in await atspi.applications() if await atspi.pid(app[0]) == pid]
    if not owner:
        return None
    (found,) = await atspi.batch(
        [(owner[0], COLLECTION, "GetMatches", "(aiia{ss}iaiiasib)uib", (FOCUSED_RULE, 1, 1, True))]
    )
    if not isinstance(found, list) or not found:
        return None
    bus, path = found[0]
    return await text_state(atspi, element_id((str(bus), str(path))))


async def text_state(atspi: Atspi, element: str) -> dict[str, Any] | None:
    """``{"element", "count", "digest", "focused"}`` of an editable text element or a terminal (None for any
    other, or once it is gone): its length and a digest of its head and tail (``TEXT_HEAD``, ``TEXT_TAIL``),
    so nothing of its content leaves this process, and whether it has the focus; two round trips."""
    ref = parse_id(element)
    role, states, count = await atspi.batch(
        [
            (ref, ACCESSIBLE, "GetRoleName", "", ()),
            (ref, ACCESSIBLE, "GetState", "", ()),
            (ref, PROPERTIES, "Get", "ss", (TEXT, "CharacterCount")),
        ]
    )
    if not isinstance(states, list) or not _variant(count):
        return None
    names = state_names(states)
    if "defunct" in names or ("editable" not in names and role != "terminal"):
        return None
    length = int(count.value)
    spans = [(0, length)]
    if length > TEXT_HEAD + TEXT_TAIL:
        spans = [(0, TEXT_HEAD), (length - TEXT_TAIL, length)]
    texts = await atspi.batch([(ref, TEXT, "GetText", "ii", span) for span in spans])
    if not all(isinstance(text, str) for text in texts):
        return None
    content = f"{length}\0{chr(0).join(texts)}".encode()
    digest = hashlib.blake2b(content, key=DIGEST_KEY, digest_size=16).hexdigest()
    return {"element": element, "count": length, "digest": digest, "focused": "focused" in names}
