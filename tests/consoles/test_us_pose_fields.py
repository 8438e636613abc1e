"""Issue 34 at the US model (no display): a field never changes by itself, a value the console adjusts is said on
the status line with the setting that limits it, the rotation stays in 0-359, the -/+ keys step by the console's
increment, and every edit leaves a one-line status."""
from __future__ import annotations

import pytest

from consoles.common.numeric import format_number
from consoles.us.model import FIELD_LABELS, PARAM, STEPPED, USModel, whole_turn
from rendering import us_physics as P
from rendering.subjects import load_runtime
from runner.headless.us import make_model
from tasks.card import load_card

SHAPE = (96, 96)
POSE_NAMES = ("probe_z_mm", "probe_azimuth_deg", "probe_rotation_deg", "probe_tilt_deg", "probe_rock_deg",
              "pressure_pct")
# The patient rolled onto the right side and turned on the bed: the rotation field's offset from the subject
# frame changes with the footprint (consoles/us/bed.py), which made the field drift (issue 34).
TURNED = {"patient_roll_deg": [60.0, 60.0], "patient_yaw_deg": [25.0, 25.0]}
FLANK = {"z_mm": -250.0, "azimuth_deg": 95.0, "rotation_deg": 30.0, "tilt_deg": 0.0, "rock_deg": 0.0,
         "pressure": 0.85}


@pytest.fixture(scope="module")
def rt(subject_cache):
    return load_runtime("dev")


def _turned(rt) -> USModel:
    return USModel(rt, "us_test", 0, {"pose": FLANK}, TURNED, out_shape=SHAPE)


def _fields(m: USModel) -> dict[str, float]:
    return {n: m.value(n) for n in PARAM}


def _offset_moves(m: USModel, name: str, value: float) -> bool:
    """Whether moving the footprint there changes the bed-frame offset of the rotation (the drift's cause)."""
    from dataclasses import replace
    kw = {"probe_z_mm": "z_mm", "probe_azimuth_deg": "azimuth_deg"}[name]
    shift = {"z_mm": -m.patient_z_mm, "azimuth_deg": m.patient_roll_deg}[kw]
    other = replace(m.pose, **{kw: value + shift})
    return abs(m.rotation_offset(other) - m.rotation_offset()) > 1.0


def test_the_issue_episode_rotation_typed_0_reads_0_and_stays_through_height_and_around_body_edits():
    """us_kidney_long_axis_search_v1 s12 seed 1 (the patient lies turned 22.9 deg on the bed): rotation typed 0
    read 360, then 359, 353, 352 after height and around-body edits with no message."""
    m = make_model(load_card("us_kidney_long_axis_search_v1"), "s12", 1)
    assert abs(m.patient_yaw_deg) > 5.0  # the episode's bed offset depends on the footprint
    assert m.set_param("probe_rotation_deg", 0) == 0.0
    assert m.message == "Rotation 0 deg."
    z0, az0 = m.value("probe_z_mm"), m.value("probe_azimuth_deg")
    moved_offset = False
    for name, value in (("probe_z_mm", z0 + 20), ("probe_azimuth_deg", az0 + 10), ("probe_z_mm", z0 - 15),
                        ("probe_azimuth_deg", az0 - 15)):
        moved_offset |= _offset_moves(m, name, value)
        before = _fields(m)
        m.set_param(name, value)
        after = _fields(m)
        assert after["probe_rotation_deg"] == 0.0, (name, value, after["probe_rotation_deg"])
        changed = {n for n in PARAM if after[n] != before[n]}
        assert changed == {name}, f"{name} -> {value} also changed {changed - {name}}"
        assert m.message == f"{FIELD_LABELS[name]} {value:.1f} {PARAM[name].unit}."
        # the dump's field values are the same numbers, and the subject-frame pose is the one they describe
        disp = m.state()["probe_display"]
        assert disp["rotation_deg"] == 0.0 and disp["z_mm"] == pytest.approx(m.value("probe_z_mm"), abs=1e-6)
        assert whole_turn(m.pose.rotation_deg + m.rotation_offset()) == 0.0
    assert moved_offset, "the edits should move the footprint where the bed offset differs (else nothing is tested)"


@pytest.mark.parametrize("typed, shown", [(0, 0.0), (359, 359.0), (359.6, 0.0), (360, 0.0), (370, 10.0),
                                          (-0.4, 0.0), (-30, 330.0), (719.5, 0.0)])
def test_rotation_is_always_in_0_359(rt, typed, shown):
    m = _turned(rt)
    got = m.set_param("probe_rotation_deg", typed)
    assert got == shown and 0.0 <= got <= 359.0
    assert m.state()["probe_display"]["rotation_deg"] == shown
    assert 0.0 <= m.pose.rotation_deg < 360.0
    typed_text = format_number(typed, 0, "deg")
    if typed_text != format_number(shown, 0, "deg"):  # adjusted: the status names the value, the new one and why
        assert m.message == f"Rotation {typed_text} set as {shown:.0f} deg: the dial turns round, 0-359 deg."
    else:
        assert m.message == f"Rotation {shown:.0f} deg."


def test_no_field_drifts_through_a_sequence_of_pose_edits(rt):
    """Every pose edit changes its own field only, on a turned patient where the bed offset depends on the
    footprint; the image plane follows (the pose in the subject frame moves)."""
    m = _turned(rt)
    m.set_param("probe_rotation_deg", 45)
    edits = [("probe_z_mm", -300.0), ("probe_azimuth_deg", -60.0), ("probe_tilt_deg", 10.0), ("probe_z_mm", -220.0),
             ("pressure_pct", 70.0), ("probe_azimuth_deg", -80.0), ("probe_rock_deg", -5.0),
             ("probe_rotation_deg", 300.0), ("probe_azimuth_deg", -45.0)]
    for name, value in edits:
        before = _fields(m)
        m.set_param(name, value)
        after = _fields(m)
        assert {n for n in PARAM if after[n] != before[n]} == {name}, (name, before, after)
        assert after[name] == pytest.approx(value)


def test_a_drag_on_the_body_map_keeps_the_rotation_field(rt):
    m = _turned(rt)
    m.set_param("probe_rotation_deg", 12)
    m.move_on_bed(m.value("probe_z_mm") + 30.0, m.value("probe_azimuth_deg") - 20.0)
    assert m.value("probe_rotation_deg") == 12.0
    assert m.message.startswith("Probe moved: height ") and ";" not in m.message  # nothing limited it


def test_a_drag_beyond_the_body_or_the_map_says_what_limited_it(rt):
    m = _turned(rt)
    lo, _ = m.bed_z_limits()
    r = m.value("probe_rotation_deg")
    m.move_on_bed(lo - 50.0, m.value("probe_azimuth_deg"))
    assert m.value("probe_z_mm") == pytest.approx(lo, abs=0.11)
    assert m.message == f"Probe moved: height {lo:.1f} mm, around body {m.value('probe_azimuth_deg'):.1f} deg; " \
                        f"the body ends at height {lo:.1f} mm."
    assert m.value("probe_rotation_deg") == r
    m.move_on_bed(m.value("probe_z_mm") + 60.0, 140.0)
    assert m.message.endswith("; around body is -135 to 135 deg.") and "body ends" not in m.message


def test_a_height_beyond_the_body_is_adjusted_with_the_reason(rt):
    m = _turned(rt)
    lo, hi = m.bed_z_limits()
    want = PARAM["probe_z_mm"].lo  # inside the field's range, beyond the body's end
    assert want < lo
    got = m.set_param("probe_z_mm", want)
    assert got == pytest.approx(round(lo, 1), abs=0.11) and PARAM["probe_z_mm"].lo <= got <= PARAM["probe_z_mm"].hi
    assert m.message.startswith(f"Height {want:.1f} mm set as {got:.1f} mm: the body spans ")
    r = m.value("probe_rotation_deg")
    m.set_param("probe_z_mm", hi + 500.0 if hi + 500.0 <= PARAM["probe_z_mm"].hi else PARAM["probe_z_mm"].hi)
    assert m.value("probe_rotation_deg") == r


def test_a_focus_below_the_depth_is_adjusted_and_a_shallower_depth_says_it_moved_the_focus(rt):
    m = USModel(rt, "us_test", 0, {"pose": FLANK}, out_shape=SHAPE)
    m.set_param("depth_cm", 12)
    assert m.message == "Depth 12.0 cm."
    m.set_param("focus_cm", 15)
    assert m.value("focus_cm") == 12.0
    assert m.message == "Focus 15.0 cm set as 12.0 cm: the focus stays within the depth (12.0 cm)."
    m.set_param("depth_cm", 9)
    assert m.value("focus_cm") == 9.0
    assert m.message == "Depth 9.0 cm. Focus 12.0 cm -> 9.0 cm (within the depth)."
    m.set_param("frequency_mhz", 3.3)
    assert m.message.startswith("Frequency 3.3 MHz set as 3.5 MHz: the probe's frequencies are 2, 2.5")


@pytest.mark.parametrize("name, step", [("depth_cm", 1.0), ("focus_cm", 0.5), ("gain", 2.0)])
def test_the_minus_plus_keys_step_by_the_console_increment(rt, name, step):
    m = USModel(rt, "us_test", 0, {"pose": FLANK}, out_shape=SHAPE)
    m.set_param("depth_cm", 16)
    m.set_param("focus_cm", 8)
    assert PARAM[name].step == step and name in STEPPED
    v0 = m.value(name)
    assert m.step_param(name, +1) == pytest.approx(v0 + step)
    assert m.message == f"{FIELD_LABELS[name]} {v0 + step:.{PARAM[name].decimals}f} {PARAM[name].unit}."
    assert m.step_param(name, -1) == pytest.approx(v0)
    for _ in range(300):  # never past the range
        m.step_param(name, +1)
    assert m.value(name) == pytest.approx(min(PARAM[name].hi, m.value("depth_cm") if name == "focus_cm" else 1e9))
    with pytest.raises(Exception):
        m.step_param("frequency_mhz", 1)


def test_gain_and_tgc_declare_their_units_and_ranges():
    assert (PARAM["gain"].unit, PARAM["gain"].lo, PARAM["gain"].hi) == ("%", P.GAIN_RANGE[0], P.GAIN_RANGE[1])
    for k in range(1, P.TGC_BANDS + 1):
        p = PARAM[f"tgc_{k}"]
        assert (p.unit, p.lo, p.hi) == ("dB", P.TGC_RANGE_DB[0], P.TGC_RANGE_DB[1])


def test_every_edit_leaves_a_status_line(rt):
    """Each action with an effect on the pose or a parameter says what it did (the line was blank after most)."""
    m = USModel(rt, "us_test", 0, {"pose": FLANK}, out_shape=SHAPE)
    values = {"probe_z_mm": -260.0, "probe_azimuth_deg": 90.0, "probe_rotation_deg": 20.0, "probe_tilt_deg": 3.0,
              "probe_rock_deg": -2.0, "pressure_pct": 80.0, "depth_cm": 14.0, "focus_cm": 7.5, "frequency_mhz": 4.0,
              "gain": 60.0, "dynamic_range_db": 63.0, **{f"tgc_{k}": float(k - 4) for k in range(1, 9)}}
    assert set(values) == set(PARAM)
    for name, value in values.items():
        m.message = ""
        m.set_param(name, value)
        assert m.message.startswith(FIELD_LABELS[name] + " ") and "\n" not in m.message, (name, m.message)
    m.message = ""
    m.set_param("grey_map", "C")
    assert m.message == "Grey map C."
    for action, arg in ((m.move_probe, (5.0, 0.0)), (m.apply_gel, ()), (m.freeze, ())):
        m.message = ""
        action(*arg)
        assert m.message
    m.message = ""
    m.caliper_point(0.0, 40.0)
    assert m.message == "Caliper 1: click the second point."
