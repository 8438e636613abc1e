"""Declared parameters (consoles.common.params) and the CT model's use of them, without Qt."""
from __future__ import annotations

import pytest

from consoles.common.model_base import ConsoleActionError, Rule
from consoles.common.params import Parameter
from consoles.ct import bolus
from consoles.ct.model import PARAMETERS, CTModel
from rendering.subjects import load_runtime


class Box:
    def __init__(self, **kw) -> None:
        self.__dict__.update(kw)


def test_clamp_bounds_and_decimals():
    pitch = Parameter("pitch", "Pitch", "", 0.2, 1.5, 2, 0.05)
    assert pitch.clamp(0.333) == 0.33 and pitch.clamp(9) == 1.5 and pitch.clamp(-1) == 0.2
    assert pitch.bound(0.333) == 0.333  # bound only: a model may apply its own limits before rounding
    kv = Parameter("kv", "Tube voltage", "kV", 70, 150, 0, 10)
    assert kv.clamp(99.6) == 100.0 and kv.clamp("120") == 120.0
    assert kv.widget_name == "kv_field"
    assert Parameter("delay_s", "Scan delay", "s", 2, 30, 0, 1, widget="trigger_delay_field").widget_name == \
        "trigger_delay_field"
    with pytest.raises(ValueError):
        Parameter("bad", "Bad", "", 5, 1, 0, 1)
    with pytest.raises(ValueError):
        Parameter("bad", "Bad", "", 0, 1, 0, 0)


def test_enabled_when_rule_and_plain_predicate():
    idle = Rule((lambda m: m.status == "idle", "Cannot change parameters while scanning."))
    p = Parameter("kv", "Tube voltage", "kV", 70, 150, 0, 10, enabled_when=idle)
    m = Box(status="scanning", kv=120.0)
    assert not p.enabled(m) and p.refusal(m) == "Cannot change parameters while scanning."
    m.status = "idle"
    assert p.enabled(m) and p.refusal(m) is None
    q = Parameter("mas", "Tube current", "mAs", 10, 600, 0, 10, enabled_when=lambda m: m.status == "idle")
    m.status = "busy"
    assert not q.enabled(m) and q.refusal(m) == "Tube current cannot be changed now."


def test_value_and_commit_go_through_the_declared_accessors():
    seen = []
    p = Parameter("z", "Z", "mm", -10, 10, 1, 1, get=lambda m: m.inner * 2, set=lambda m, v: seen.append(v))
    assert p.value(Box(inner=2.5)) == 5.0
    p.commit(None, 3.0)
    assert seen == [3.0]
    assert Parameter("kv", "kV", "kV", 70, 150, 0, 10).value(Box(kv=100)) == 100.0
    with pytest.raises(TypeError):
        Parameter("kv", "kV", "kV", 70, 150, 0, 10).commit(Box(kv=100), 90)


# ---- CT -----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def rt():
    return load_runtime("dev")


def test_ct_declares_every_field_once(rt):
    m = CTModel(rt, "t", 0)
    assert set(m.parameters) == {p.name for p in PARAMETERS} | {p.name for p in bolus.PARAMETERS}
    assert {p.widget_name for p in m.parameters.values()} >= {
        "start_field", "end_field", "table_height_field", "kv_field", "mas_field", "pitch_field",
        "monitor_z_field", "threshold_field", "trigger_delay_field"}


def test_ct_model_clamps_through_its_parameters(rt):
    m = CTModel(rt, "t", 0)
    m.load_protocol("chest_routine")
    m.set_param("pitch", 0.333)
    m.set_param("kv", 1000)
    assert m.pitch == 0.33 and m.kv == 150.0
    m.acquire_scout()
    m.on_clock(0, 5)
    m.set_table_height(999)
    assert m.table_height_mm == 260.0
    m.set_table_height(100.04)
    assert m.table_height_mm == 100.0


def test_ct_disabled_parameter_is_refused_with_the_rules_reason(rt):
    """What greys a field out is what the model refuses: one rule, two uses."""
    m = CTModel(rt, "t", 0)
    kv, start = m.parameters["kv"], m.parameters["start_mm"]
    assert not kv.enabled(m)
    with pytest.raises(ConsoleActionError, match="Load a protocol first"):
        kv.commit(m, 100)
    assert m.message == "Load a protocol first."
    m.load_protocol("ccta")
    assert kv.enabled(m) and not start.enabled(m)
    with pytest.raises(ConsoleActionError, match="Acquire the scout before planning"):
        start.commit(m, 0)
    m.acquire_scout()
    assert not kv.enabled(m)  # scout running: the scanner is busy
    with pytest.raises(ConsoleActionError, match="busy"):
        kv.commit(m, 100)
    m.on_clock(0, 5)
    assert kv.enabled(m) and start.enabled(m) and m.parameters["monitor_z_mm"].enabled(m)
    kv.commit(m, 100)
    assert m.kv == 100.0
    thr = m.parameters["threshold_hu"]
    thr.commit(m, 152.4)
    assert m.bolus.threshold_hu == 152.0  # the decimals the field shows are the ones the model keeps
    m.load_protocol("chest_routine")
    assert not thr.enabled(m)
    with pytest.raises(ConsoleActionError, match="only available in contrast protocols"):
        thr.commit(m, 200)


def test_every_ct_parameter_refusal_matches_its_enabled_state(rt):
    """Across workflow states, commit succeeds exactly when enabled() says so."""
    m = CTModel(rt, "t", 0)
    steps = [lambda: None, lambda: m.load_protocol("ccta"), m.acquire_scout, lambda: m.on_clock(0, 5),
             m.confirm, m.scan, lambda: m.on_clock(5, 6)]
    checked = 0
    for step in steps:
        step()
        for p in m.parameters.values():
            enabled = p.enabled(m)
            try:
                p.commit(m, p.value(m))
                accepted = True
            except ConsoleActionError:
                accepted = False
            assert accepted == enabled, (p.name, m.scout_status, m.scan_status)
            checked += 1
    assert checked == len(steps) * len(m.parameters)
