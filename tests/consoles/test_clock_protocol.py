"""Simulated clock and control protocol: pure logic, no display."""
import json
import math

import pytest

from consoles.common.clock import SimClock
from consoles.common.protocol import ControlProtocol


def test_clock_moves_only_when_told_and_notifies_intervals():
    c = SimClock()
    seen = []
    c.subscribe(lambda a, b: seen.append((a, b)))
    assert c.now == 0.0
    c.advance(0.5)
    c.advance(0.0)  # no-op, no notification
    c.advance(1.25)
    assert c.now == pytest.approx(1.75)
    assert seen == [(0.0, 0.5), (0.5, 1.75)]


@pytest.mark.parametrize("bad", [-1.0, math.nan, 601.0])
def test_clock_rejects_bad_advances(bad):
    c = SimClock()
    with pytest.raises(ValueError):
        c.advance(bad)
    assert c.now == 0.0


def test_clock_accumulates_without_float_drift():
    c = SimClock()
    for _ in range(1000):
        c.advance(0.1)
    assert c.now == 100.0


def _reply(p, line):
    return json.loads(p.handle_line(line))


def test_protocol_dispatch_errors_and_ids():
    p = ControlProtocol()
    p.register("echo", lambda value=1: {"value": value})
    assert _reply(p, '{"cmd": "echo", "value": 3, "id": 7}') == {"ok": True, "value": 3, "id": 7}
    assert _reply(p, "not json")["ok"] is False
    assert "unknown command" in _reply(p, '{"cmd": "nope"}')["error"]
    assert "bad arguments" in _reply(p, '{"cmd": "echo", "zzz": 1}')["error"]
    assert "JSON object" in _reply(p, "[1, 2]")["error"]


def test_protocol_handler_exception_becomes_error_reply():
    p = ControlProtocol()

    def boom():
        raise RuntimeError("kaput")

    p.register("boom", boom)
    r = _reply(p, '{"cmd": "boom"}')
    assert r["ok"] is False and "kaput" in r["error"]
