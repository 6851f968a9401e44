"""The garbage collector's policy for services (deskpilot/collector.py), in this process's own collector."""

from __future__ import annotations

import gc
import weakref

from deskpilot import collector


class Cycle:
    """Garbage only the cyclic collector frees: it refers to itself."""

    def __init__(self) -> None:
        self.me = self


def test_serving_leaves_what_existed_out_of_collections_until_it_ends() -> None:
    before = Cycle()
    gone = weakref.ref(before)
    with collector.serving():
        del before
        made = Cycle()
        made_gone = weakref.ref(made)
        del made
        gc.collect()
        assert gone() is not None, "what existed as it started was walked"
        assert made_gone() is None, "what was made since is collected as ever"
    gc.collect()
    assert gone() is None, "what was frozen went back to the collector"


def test_made_in_one_go_collects_nothing_meanwhile_and_freezes_what_it_made() -> None:
    assert gc.isenabled()
    try:
        with collector.made_in_one_go():
            assert not gc.isenabled()
            made = Cycle()
            gone = weakref.ref(made)
        assert gc.isenabled()
        del made
        gc.collect()
        assert gone() is not None
    finally:
        gc.unfreeze()
    gc.collect()
    assert gone() is None


def test_made_in_one_go_leaves_a_collector_that_was_off_off() -> None:
    gc.disable()
    try:
        with collector.made_in_one_go():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()
