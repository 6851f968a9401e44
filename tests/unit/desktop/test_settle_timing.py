"""How long a settle waits for an action's drawing and how much quiet is rest, by action (settle.DEFAULTS),
and when the screen counts as at rest (``Watch.due``), or may be found at rest early (``Watch.early``)."""

from __future__ import annotations

import math
from typing import Any

from deskpilot.computer.actions import parse_action
from deskpilot.computer.fields import Settle
from deskpilot.desktop.activity import SOON_MS
from deskpilot.desktop.settle import DEFAULTS, EARLY_MS, NOTHING_EXPECTED, REACTION_MS, Timing, Watch, timing


def action(name: str, **fields: Any) -> Any:
    return parse_action({"action": name, **fields})


def test_keys_to_a_window_expect_drawing_and_keys_to_nowhere_do_not() -> None:
    typed = action("type_text", text="echo hi\n")
    assert timing(typed, None) == DEFAULTS["type_text"] and timing(typed, None).expect > 0
    assert timing(typed, None, keys_go_somewhere=False) == NOTHING_EXPECTED


def test_modifiers_alone_and_released_keys_expect_no_drawing() -> None:
    assert timing(action("press_keys", keys=["shift", "ctrl"], press="down"), None).expect == 0
    assert timing(action("press_keys", keys=["ctrl", "l"], press="up"), None).expect == 0
    assert timing(action("press_keys", keys=["ctrl", "l"], press="down"), None).expect > 0


def test_a_launch_waits_longer_and_a_move_expects_nothing() -> None:
    launch = timing(action("application", application="terminal"), None)
    assert launch.expect >= 1000 and launch.quiet > DEFAULTS["click_mouse"].quiet
    assert timing(action("move_mouse", coordinates={"x": 1, "y": 1}), None).expect == 0


def test_what_the_client_asks_wins_over_the_defaults() -> None:
    click = action("click_mouse", coordinates={"x": 1, "y": 1}, button="left", clickCount=1)
    asked = timing(click, Settle(quietMs=120, expectMs=0, maxMs=900))
    default = DEFAULTS["click_mouse"]
    # the pointer's delayed reactions are the action's, whatever quiet the client asked
    assert asked == Timing(expect=0, quiet=120, answer=default.answer, early=False, reaction=default.reaction)
    assert timing(click, Settle(maxMs=900)) == default


def test_pointer_input_waits_for_delayed_reactions_keys_and_moves_do_not() -> None:
    click = timing(action("click_mouse", coordinates={"x": 1, "y": 1}, button="left", clickCount=1), None)
    scroll = timing(action("scroll", coordinates={"x": 1, "y": 1}, direction="down", scrollCount=1), None)
    assert click.reaction == scroll.reaction == REACTION_MS >= 500  # GTK's tooltip delay
    assert click.horizon == REACTION_MS
    keys = timing(action("type_text", text="x"), None)
    move = timing(action("move_mouse", coordinates={"x": 1, "y": 1}), None)
    assert keys.reaction == move.reaction == 0 and keys.horizon == move.horizon == SOON_MS


def test_the_reaction_floor_holds_a_quiet_screen_until_it_passes() -> None:
    plan = DEFAULTS["click_mouse"]
    watch = Watch(mark=7, started=100.0, seen=9, first=100.03, last=100.03)
    assert abs(watch.due(plan) - 100.08) < 1e-9  # no floor: the quiet period decides
    watch.floor = 100.0 + plan.reaction / 1000
    assert watch.due(plan) == watch.floor and abs(watch.quiet_due(plan) - 100.08) < 1e-9
    watch.last = 100.54  # a drawing just before the floor: its quiet period still runs
    assert abs(watch.due(plan) - 100.59) < 1e-9


def test_the_programs_word_ends_a_default_quiet_early_never_an_asked_one() -> None:
    plan = DEFAULTS["click_mouse"]
    watch = Watch(mark=7, started=100.0, seen=7)
    assert watch.early(plan) == math.inf  # nothing drawn, the client has not read the input
    watch.answered = 100.004
    assert abs(watch.early(plan) - (100.004 + EARLY_MS / 1000)) < 1e-9
    watch.first = watch.last = 100.03
    assert abs(watch.early(plan) - (100.03 + EARLY_MS / 1000)) < 1e-9
    asked = action("click_mouse", coordinates={"x": 1, "y": 1}, button="left", clickCount=1)
    assert watch.early(timing(asked, Settle(quietMs=60, maxMs=900))) == math.inf
    assert watch.early(DEFAULTS["application"]) == math.inf  # a launch's stages wait on other programs
    alt = action("press_keys", keys=["alt", "left"], press="down")
    assert watch.early(timing(alt, None)) == math.inf  # GTK's mnemonics are on a 300 ms timer


def test_nothing_drawn_is_at_rest_after_the_expectation_or_the_clients_answer() -> None:
    plan = Timing(expect=500, quiet=50, answer=35)
    watch = Watch(mark=7, started=100.0, seen=7)
    assert watch.due(plan) == 100.5
    watch.answered = 100.002  # the client read the input: its drawing would come within ``answer``
    assert abs(watch.due(plan) - 100.05) < 1e-9  # but the screen is quiet for ``quiet`` at least
    watch.answered = 100.1
    assert abs(watch.due(plan) - 100.135) < 1e-9
    watch.answered = 100.48  # never later than the expectation window
    assert watch.due(plan) == 100.5


def test_drawing_is_at_rest_after_the_quiet_or_twice_its_longest_pause() -> None:
    plan = Timing(expect=500, quiet=50)
    watch = Watch(mark=7, started=100.0, seen=9, first=100.03, last=100.03)
    assert abs(watch.due(plan) - 100.08) < 1e-9
    watch.last, watch.longest_pause = 100.2, 0.04  # drawings 40 ms apart: a pause is not rest
    assert abs(watch.due(plan) - 100.28) < 1e-9


def test_a_press_that_leaves_alt_held_waits_for_the_mnemonics() -> None:
    held = timing(action("press_keys", keys=["alt", "Up"], press="down"), None)
    assert held.quiet >= 350 and held.expect == DEFAULTS["press_keys"].expect
    assert timing(action("press_keys", keys=["alt"], press="down"), None).quiet >= 350
    assert timing(action("press_keys", keys=["alt", "Up"], press="up"), None) == NOTHING_EXPECTED
    assert (
        timing(action("press_keys", keys=["ctrl", "l"], press="down"), None).quiet
        == DEFAULTS["press_keys"].quiet
    )


def test_the_end_of_the_work_is_waited_out_as_input_is() -> None:
    """A command's output comes after its job ends (the shell writes it, the terminal repaints): the end,
    first seen at a look, is an input of its own, never rest."""
    plan = DEFAULTS["type_text"]
    watch = Watch(mark=7, started=100.0, seen=9, first=100.03, last=100.03)
    watch.saw_work(True, 100.1)
    watch.saw_work(True, 100.4)
    assert abs(watch.due(plan) - (100.4 + plan.answer / 1000)) < 1e-9  # at work: look again in a while
    assert watch.early(plan) == 100.03 + EARLY_MS / 1000  # the looks go on (the job's end is seen at one)
    watch.saw_work(False, 100.45)
    watch.saw_work(False, 100.46)  # the end is the first look that found it over
    assert abs(watch.due(plan) - (100.45 + plan.answer / 1000)) < 1e-9
    assert watch.early(plan) == math.inf  # nothing drawn since: its output is on its way
    watch.last = 100.47
    assert abs(watch.early(plan) - (100.47 + EARLY_MS / 1000)) < 1e-9
    watch.saw_work(True, 100.5)  # another job (``sleep 1; sleep 1``)
    assert watch.work_done is None and abs(watch.due(plan) - (100.5 + plan.answer / 1000)) < 1e-9
