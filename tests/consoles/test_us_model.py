"""USModel without Qt: controls clamp, presets, freeze keeps the frame, calipers, annotations, exam strip, contact
faults vs gain, seeded draws and the JSON state dump."""
from __future__ import annotations

import json

import numpy as np
import pytest

from consoles.us.contact import Coupling
from consoles.us.model import CHOICES, PARAM, ConsoleActionError, USModel
from rendering import us_image as U
from rendering import us_physics as P
from rendering.subjects import load_runtime

# Small images keep the fast lane fast: what is tested is bookkeeping, not image quality.
SHAPE = (128, 128)
KIDNEY_POSE = {"z_mm": -295.0, "azimuth_deg": -85.0, "rotation_deg": 5.0, "tilt_deg": -15.0}


@pytest.fixture(scope="module")
def rt():
    return load_runtime("dev")


def _model(rt, seed=0, perturbations=None, task="us_test", **state) -> USModel:
    state.setdefault("pose", KIDNEY_POSE)
    return USModel(rt, task, seed, state, perturbations, out_shape=SHAPE)


# ---- controls -----------------------------------------------------------------------------------------
def test_controls_clamp_and_snap(rt):
    m = _model(rt)
    assert m.set_param("gain", 250) == 100.0
    assert m.set_param("gain", -4) == 0.0
    assert m.set_param("frequency_mhz", 3.3) == 3.5  # snapped to the probe's frequencies
    assert m.set_param("frequency_mhz", 9.0) == 5.0
    assert m.set_param("depth_cm", 99) == P.DEPTH_RANGE_MM[1] / 10
    assert m.set_param("focus_cm", 30) == 24.0
    assert m.set_param("depth_cm", 8) == 8.0
    assert m.value("focus_cm") == 8.0  # the focus follows the depth into the image
    assert m.set_param("tgc_3", -50) == P.TGC_RANGE_DB[0]
    assert m.controls["tgc_db"][2] == P.TGC_RANGE_DB[0] and m.controls["tgc_db"][3] == 0.0
    assert m.set_param("dynamic_range_db", 10) == P.DYNAMIC_RANGE_DB[0]
    assert m.set_param("probe_rotation_deg", 370) == 10.0  # the dial turns round
    assert m.set_param("probe_rotation_deg", -30) == 330.0
    assert m.set_param("probe_tilt_deg", 80) == 45.0
    assert m.set_param("pressure_pct", 150) == 100.0 and m.pose.pressure == 1.0
    with pytest.raises(ConsoleActionError):
        m.set_param("gain", float("nan"))
    with pytest.raises(ConsoleActionError):
        m.set_param("grey_map", "Z")
    with pytest.raises(ConsoleActionError):
        m.set_param("no_such", 1)
    assert all(p.widget_name.endswith("_field") for p in PARAM.values())


def test_probe_height_stays_on_the_subject(rt):
    m = _model(rt)
    m.set_pose(z_mm=5000.0)
    assert m.pose.z_mm == m.z_limits[1]
    m.move_probe(dz_mm=-1e5)
    assert m.pose.z_mm == m.z_limits[0]
    with pytest.raises(ConsoleActionError):
        m.set_pose(roll_deg=3.0)


def test_preset_loads_its_controls_and_is_logged_as_acquisition(rt):
    m = _model(rt)
    m.set_param("gain", 80)
    m.set_preset("Renal")
    r = P.PRESETS["Renal"]
    assert m.preset == "Renal" and m.controls["gain"] == r.gain and m.controls["depth_mm"] == r.depth_mm
    assert m.events[-1] == {"t": 0.0, "event": "param_changed", "name": "preset", "value": "Renal",
                            "kind": "acquisition"}
    m.set_param("grey_map", "C")
    assert m.events[-1]["kind"] == "display"
    assert set(CHOICES["preset"][0]) == {"Abdomen", "Renal", "Bladder"}


def test_compound_is_on_in_every_preset_and_an_acquisition_setting(rt):
    """Spatial compounding (rendering.us_physics COMPOUND_*): the presets load it on, "Off" forms the single
    steered-free frame, the change is an acquisition (a new frame; refused while frozen), and the dump, the
    start and a saved item record the looks so an oracle re-forms the image the agent saw."""
    from consoles.us.model import COMPOUND_OPTIONS, compound_looks

    assert COMPOUND_OPTIONS == ("Off",) + tuple(str(n) for n in P.COMPOUND_LOOKS[1:])
    m = _model(rt)
    for name in P.PRESET_NAMES:
        m.set_preset(name)
        assert compound_looks(m.controls["compound"]) == P.PRESETS[name].compound > 1
        assert m.acquisition().compound == P.PRESETS[name].compound
    s = m.state()
    assert s["controls"]["compound"] == s["start"]["controls"]["compound"] == P.COMPOUND_DEFAULT_LOOKS
    on = m.frame()
    m.set_param("compound", "Off")
    assert m.events[-1]["kind"] == "acquisition" and m.message == "Compound Off."
    off = m.frame()
    assert m.acquisition().compound == 1 and off.beam is not on.beam
    assert not np.array_equal(off.pixels, on.pixels)
    assert m.state()["controls"]["compound"] == 1
    with pytest.raises(ConsoleActionError, match="one of"):
        m.set_param("compound", "4")
    m.set_param("compound", "5")
    m.freeze()
    with pytest.raises(ConsoleActionError, match="frozen"):
        m.set_param("compound", "3")
    item = json.loads(json.dumps(m.save_image().to_dict()))
    assert item["acquisition"]["compound"] == 5
    assert np.array_equal(U.frame_from_record(rt, item, SHAPE).pixels, m.frame().pixels)


# ---- frames and freeze ----------------------------------------------------------------------------------
def test_frame_is_formed_only_when_something_changes(rt):
    m = _model(rt)
    f1 = m.frame()
    assert m.frame() is f1 and m.frames_formed == 1
    m.set_param("dynamic_range_db", 80)  # display only: no new acquisition
    f2 = m.frame()
    assert f2 is not f1 and f2.beam is f1.beam and m.frames_formed == 1
    m.set_param("gain", 70)
    assert m.frame().beam is not f1.beam and m.frames_formed == 2
    assert m.frame().pixels.shape == SHAPE


def test_freeze_keeps_the_frame(rt):
    m = _model(rt)
    before = m.frame().pixels.copy()
    m.freeze()
    for name, value in (("gain", 90), ("depth_cm", 20), ("probe_rotation_deg", 90), ("preset", "Bladder")):
        with pytest.raises(ConsoleActionError, match="frozen"):
            m.set_param(name, value)
    with pytest.raises(ConsoleActionError):
        m.set_pose(z_mm=-250.0)
    with pytest.raises(ConsoleActionError):
        m.save_clip()
    assert np.array_equal(m.frame().pixels, before)
    m.set_param("grey_map", "D")  # post-processing still works on the frozen acquisition
    assert not np.array_equal(m.frame().pixels, before) and m.frame().beam is m.beam()
    m.set_param("grey_map", "B")
    assert np.array_equal(m.frame().pixels, before)
    m.freeze()  # the same key unfreezes
    assert not m.frozen
    m.set_param("gain", 90)
    assert not np.array_equal(m.frame().pixels, before)


# ---- calipers and annotations --------------------------------------------------------------------------
def test_caliper_length_and_subject_ends(rt):
    m = _model(rt)
    with pytest.raises(ConsoleActionError, match="Freeze"):
        m.caliper_point(0.0, 40.0)
    m.freeze()
    assert m.caliper_point(-20.0, 40.0) is None and m.caliper_pending == (-20.0, 40.0)
    cal = m.caliper_point(10.0, 80.0)
    assert cal.length_mm == pytest.approx(50.0)  # a 30-40-50 triangle
    a, b = (np.asarray(e) for e in cal.ends_subject)
    assert np.linalg.norm(a - b) == pytest.approx(50.0, abs=1e-6)  # the image plane is in mm
    g = m.geometry()
    assert np.allclose(g.subject_to_image(a)[:2], (-20.0, 40.0), atol=1e-6)
    with pytest.raises(ConsoleActionError, match="inside"):
        m.caliper_point(0.0, -30.0)  # above the footprint: outside the sector
    m.move_caliper_end(1, 2, 10.0, 40.0)
    assert m.calipers[0].length_mm == pytest.approx(30.0)
    m.freeze()  # unfreeze clears the calipers
    assert m.calipers == [] and m.caliper_pending is None


def test_annotation_allowlist(rt):
    m = _model(rt)
    a = m.add_annotation("RT KIDNEY long")
    assert a.text == "RT KIDNEY long"
    for bad in ("", "   ", "x" * 41, "rm -rf ~", "<b>", "a\tb"):
        with pytest.raises(ConsoleActionError):
            m.add_annotation(bad)
    assert m.add_annotation(" LT  ").text == "LT"  # surrounding spaces are trimmed
    m.annotations.pop()
    assert len(m.annotations) == 1


# ---- exam strip ----------------------------------------------------------------------------------------
def test_save_records_pose_controls_calipers_and_annotations(rt):
    m = _model(rt)
    m.set_preset("Renal")
    clip = m.save_clip(2.0)
    assert clip.kind == "clip" and clip.record["n_frames"] == int(round(2.0 * m.frame_rate_hz()))
    m.freeze()
    m.caliper_point(-30.0, 50.0)
    m.caliper_point(30.0, 50.0)
    m.add_annotation("RT KIDNEY")
    img = m.save_image()
    d = img.to_dict()
    assert d["kind"] == "image" and d["frozen"] is True and d["uid"] == 2
    assert d["calipers"][0]["length_mm"] == pytest.approx(60.0)
    assert d["annotations"][0]["text"] == "RT KIDNEY"
    assert d["acquisition"]["preset"] == "Renal" and d["pose"]["z_mm"] == m.pose.z_mm
    assert d["plane"] == m.geometry().to_dict()
    assert img.pixels is not None and img.pixels.shape == SHAPE
    # a later change does not rewrite what was saved
    m.freeze()
    m.set_param("gain", 10)
    assert m.state()["saved"][1]["acquisition"]["gain"] == P.PRESETS["Renal"].gain
    m.delete_saved(1)
    assert [s.uid for s in m.saved] == [2]


# ---- contact vs gain -------------------------------------------------------------------------------------
def test_gel_fault_darkens_one_side_until_gel_is_applied(rt):
    m = _model(rt, perturbations={"dark_cause": ["contact"], "contact_fault": ["no_gel_left"]})
    assert m.dark_cause == "contact" and m.coupling.fault == "no_gel_left"
    dark = m.beam().db.copy()
    m.apply_gel()
    good = m.beam().db
    n = dark.shape[1]
    assert (good[:, : n // 4] - dark[:, : n // 4]).mean() > 20.0  # the dry side comes back
    assert np.abs(good[:, -n // 4:] - dark[:, -n // 4:]).max() < 1e-3  # the other side never changed
    assert m.state()["contact"]["coupling"]["ok"]
    assert Coupling("no_gel").line_factors(8).max() < 0.1


def test_lifted_probe_is_fixed_by_pressure(rt):
    m = _model(rt, perturbations={"dark_cause": ["contact"], "contact_fault": ["lifted"]})
    assert m.pose.pressure < 0.1 and m.state()["contact"]["fraction_in_contact"] < 0.9
    m.set_param("pressure_pct", 80)
    assert m.state()["contact"]["fraction_in_contact"] == 1.0


def test_low_gain_cause_sets_a_low_gain_and_good_contact(rt):
    m = _model(rt, perturbations={"dark_cause": ["gain"], "low_gain": [10, 10]})
    assert m.controls["gain"] == 10.0 and m.coupling.ok and m.state()["contact"]["fraction_in_contact"] == 1.0


# ---- seeds and the dump ------------------------------------------------------------------------------------
PERT = {"probe_z_mm": [-20, 20], "probe_rotation_deg": [-30, 30], "gain": [20, 80],
        "dark_cause": ["contact", "gain"]}


def test_seeded_draws_are_deterministic(rt):
    a, b = _model(rt, 3, PERT), _model(rt, 3, PERT)
    assert a.pose == b.pose and a.controls == b.controls and a.dark_cause == b.dark_cause
    assert a.coupling == b.coupling
    assert np.array_equal(a.frame().pixels, b.frame().pixels)
    assert json.dumps(a.state()) == json.dumps(b.state())
    others = [_model(rt, s, PERT) for s in range(4, 12)]
    assert len({(o.pose.z_mm, o.pose.rotation_deg) for o in others}) == len(others)
    assert {o.dark_cause for o in others} == {"contact", "gain"}  # both causes occur across seeds


def test_state_dump_is_json_and_complete(rt):
    m = _model(rt)
    m.freeze()
    m.caliper_point(0.0, 30.0)
    m.caliper_point(0.0, 60.0)
    m.add_annotation("LT")
    m.save_image()
    s = json.loads(json.dumps(m.state()))
    for key in ("pose", "plane", "controls", "frozen", "calipers", "annotations", "saved", "contact", "image",
                "events", "frozen_image"):
        assert key in s
    assert s["calipers"][0]["length_mm"] == pytest.approx(30.0)
    plane = s["plane"]
    assert abs(np.dot(plane["normal"], plane["beam_axis"])) < 1e-6
    assert "pixels" not in json.dumps(s)
    assert s["frozen_image"]["acquisition"]["depth_mm"] == m.controls["depth_mm"]


def test_random_actions_never_crash(rt):
    """300 seeded random model actions (the view's drags and clicks end in these): only refusals, and a frame
    and a JSON dump after every one."""
    rng = np.random.default_rng(7)
    m = _model(rt, 1, PERT)
    names = list(PARAM) + list(CHOICES)
    refused = 0
    for _ in range(300):
        a = int(rng.integers(9))
        try:
            if a == 0:
                n = names[int(rng.integers(len(names)))]
                if n in CHOICES:
                    m.set_param(n, CHOICES[n][0][int(rng.integers(len(CHOICES[n][0])))])
                else:
                    p = PARAM[n]
                    m.set_param(n, float(rng.uniform(p.lo - 0.2 * (p.hi - p.lo), p.hi + 0.2 * (p.hi - p.lo))))
            elif a == 1:
                m.move_probe(float(rng.normal(0, 30)), float(rng.normal(0, 20)))
            elif a == 2:
                m.set_pose(tilt_deg=float(rng.uniform(-60, 60)), rock_deg=float(rng.uniform(-40, 40)),
                           pressure=float(rng.uniform(-0.2, 1.2)))
            elif a == 3:
                m.freeze()
            elif a == 4:
                m.caliper_point(float(rng.uniform(-120, 120)), float(rng.uniform(-20, 250)))
            elif a == 5:
                m.add_annotation("".join(rng.choice(list("ABCxyz 019<>~")) for _ in range(int(rng.integers(0, 12)))))
            elif a == 6:
                (m.save_image if rng.random() < 0.5 else m.save_clip)()
            elif a == 7:
                m.apply_gel()
            else:
                m.on_clock(m.t, m.t + float(rng.uniform(0, 2)))
        except ConsoleActionError:
            refused += 1
        assert m.frame().pixels.shape == SHAPE
    json.dumps(m.state())
    assert 0 < refused < 300


def test_dump_re_forms_the_image_on_screen(rt):
    """An oracle re-forms exactly what the agent saw from the dump (rendering.us_image.frame_from_record)."""
    m = _model(rt, 5, {"dark_cause": ["contact"], "contact_fault": ["no_gel_right"], "gain": [30, 70]})
    m.set_param("grey_map", "C")
    m.set_param("tgc_7", 6)
    s = json.loads(json.dumps(m.state()))
    assert np.array_equal(U.frame_from_record(rt, s, s["image"]["shape"]).pixels, m.frame().pixels)
    m.freeze()
    item = json.loads(json.dumps(m.save_image().to_dict()))
    m.freeze()
    m.apply_gel()
    assert np.array_equal(U.frame_from_record(rt, item, SHAPE).pixels, m.saved[-1].pixels)
    assert not np.array_equal(m.frame().pixels, m.saved[-1].pixels)


# ---- task staging -----------------------------------------------------------------------------------------
def test_aimed_start_images_the_kidney_along_its_long_axis_through_the_hilum(rt):
    """`aim` places the probe from the labels alone (the console never reads the oracle): the image plane holds
    the kidney's principal axis, its centre on the beam axis, the sinus (hilum side) deeper than the centre."""
    from consoles.us import aim

    for side in ("left", "right"):
        m = USModel(rt, "us_test", 0, {"kidney": side, "aim": "long_axis"}, out_shape=SHAPE)
        c, axis, hilum = aim.kidney_from_labels(rt, side)
        g = m.geometry()
        n = g.plane_pose().normal
        assert abs(float(np.dot(n, axis))) < np.sin(np.deg2rad(1.5))  # integer-degree fields
        x, y, w = g.subject_to_image(c)
        assert abs(x) < 3.0 and abs(w) < 3.0 and 30.0 < y < 120.0
        hx, hy, hw = g.subject_to_image(hilum)
        assert hy > y and abs(hw) < 4.0
        assert m.state()["contact"]["fraction_in_contact"] >= 0.9  # the staged hold couples the array
        assert m.state()["exam"] == {"kidney": side}
    t = USModel(rt, "us_test", 0, {"kidney": "right", "aim": "transverse"}, out_shape=SHAPE)
    a = USModel(rt, "us_test", 0, {"kidney": "right", "aim": "long_axis"}, out_shape=SHAPE)
    assert abs(float(np.dot(t.geometry().plane_pose().normal, a.geometry().plane_pose().normal))) < 0.5
    with pytest.raises(ConsoleActionError, match="say which"):
        USModel(rt, "us_test", 0, {"aim": "long_axis"}, out_shape=SHAPE)


def test_task_draws_are_balanced_over_seeds(rt):
    pert = {"kidney": ["left", "right"], "preset": ["Abdomen", "Bladder"], "dark_cause": ["contact", "gain"],
            "gain": [[5, 10], [90, 95]], "frequency_mhz": [2.5, 3.0, 4.0, 4.5]}
    ms = [USModel(rt, "us_test", s, {"aim": "long_axis"}, pert, out_shape=(32, 32)) for s in range(8)]
    for block in (ms[0:2], ms[2:4], ms[4:6], ms[6:8]):  # every two seeds take each two-way option once
        assert {m.kidney for m in block} == {"left", "right"}
        assert {m.preset for m in block} == {"Abdomen", "Bladder"}
        assert {m.dark_cause for m in block} == {"contact", "gain"}
    for block in (ms[0:4], ms[4:8]):
        assert sorted(m.controls["frequency_mhz"] for m in block) == [2.5, 3.0, 4.0, 4.5]
    assert all(m.controls["gain"] <= 20 for m in ms if m.dark_cause == "gain")  # a gain cause lowers it
    # a list of ranges: each pair of seeds takes each range once, then draws inside it
    gains = [USModel(rt, "us_test", s, {}, {"gain": [[5, 10], [90, 95]]}, out_shape=(32, 32)).controls["gain"]
             for s in range(6)]
    assert all(5 <= g <= 10 or 90 <= g <= 95 for g in gains)
    assert [sum(g >= 90 for g in gains[i:i + 2]) for i in (0, 2, 4)] == [1, 1, 1]


def test_the_dark_cause_follows_the_shared_cohort_rule(rt):
    """(subject index + seed) mod 2, as MR's cohort-balanced judgements: the detector's sample is balanced
    for this rule, and dev seed 0 takes the card's first option."""
    from consoles.common.balance import cohort_balanced_choice, subject_index

    causes = [USModel(rt, "us_test", s, {}, {"dark_cause": ["contact", "gain"]}, out_shape=(32, 32)).dark_cause
              for s in range(4)]
    want = [cohort_balanced_choice("us_test", rt.id, s, "dark_cause", ["contact", "gain"]) for s in range(4)]
    assert causes == want
    assert causes[subject_index(rt.id) % 2] == "contact"  # the seed with (index + seed) even


def test_under_a_contact_cause_the_faults_kind_is_balanced_too(rt):
    """The contact fault's kind (gel | the probe held too lightly) cycles under the cause, so over any four
    consecutive seeds each remedy (apply gel, press the probe, raise the gain) is right in a quarter, a
    half and a quarter of them: a fixed "apply gel" script is no coin toss."""
    pert = {"dark_cause": ["contact", "gain"]}
    ms = [USModel(rt, "us_test", s, {}, pert, out_shape=(32, 32)) for s in range(8)]
    kinds = [("gain" if m.dark_cause == "gain" else "pressure" if m.contact_fault == "lifted" else "gel") for m in ms]
    for block in (kinds[0:4], kinds[4:8]):
        assert sorted(block) == ["gain", "gain", "gel", "pressure"], kinds
    only_gel = [USModel(rt, "us_test", s, {}, {**pert, "contact_fault": ["no_gel_left"]}, out_shape=(32, 32))
                for s in range(4)]
    assert {m.contact_fault for m in only_gel if m.dark_cause == "contact"} == {"no_gel_left"}  # the card's list


def test_the_gain_band_can_follow_the_pots_band(rt):
    """gain_band_follows: the start gain is low where the pots were left pulled down, high where pushed up
    (the start's errors add up), instead of its own balanced draw."""
    pert = {"gain": [[5, 10], [90, 95]], "tgc_offset_db": [[-8, -3], [10, 18]], "gain_band_follows": "tgc_offset_db"}
    ms = [USModel(rt, "us_test", s, {}, pert, out_shape=(32, 32)) for s in range(8)]
    assert {m.tgc_offset_db > 0 for m in ms} == {True, False}
    for m in ms:
        assert (m.controls["gain"] >= 90) == (m.tgc_offset_db > 0), (m.seed, m.tgc_offset_db, m.controls["gain"])
    with pytest.raises(ConsoleActionError):
        USModel(rt, "us_test", 0, {}, {**pert, "tgc_offset_db": [-8, -3]}, out_shape=(32, 32))


def test_the_dump_records_the_start(rt):
    m = _model(rt, 2, {"gain": [30, 40], "dark_cause": ["contact"], "contact_fault": ["no_gel_left"]})
    start = m.state()["start"]
    assert start["controls"]["gain"] == m.controls["gain"] and start["pose"] == m.state()["pose"]
    assert start["coupling"]["fault"] == "no_gel_left" and start["dark_cause"] == "contact"
    m.apply_gel()
    m.set_param("gain", 80)
    s = m.state()
    assert s["start"] == start and s["controls"]["gain"] == 80 and s["contact"]["coupling"]["ok"]


def test_rotation_field_reads_from_the_beds_head_when_the_patient_lies_turned(rt):
    """A patient turned on the bed moves the rotation the field shows (consoles/us/bed.py) by about the yaw
    where the flank faces the ceiling, hardly at all where it faces the side of the bed; the typed bed value
    round-trips, and the image (subject frame) is formed from the same pose as without the yaw."""
    flank = {"z_mm": -250.0, "azimuth_deg": 100.0, "rotation_deg": 30.0, "tilt_deg": 0.0, "rock_deg": 0.0,
             "pressure": 0.85}
    plain = _model(rt, pose=flank)
    up = _model(rt, perturbations={"patient_roll_deg": [90.0, 90.0], "patient_yaw_deg": [20.0, 20.0]}, pose=flank)
    side = _model(rt, perturbations={"patient_roll_deg": [0.0, 0.0], "patient_yaw_deg": [20.0, 20.0]}, pose=flank)
    assert plain.value("probe_rotation_deg") == pytest.approx(30.0)
    for m in (up, side):  # the same probe on the body (its rotation kept at whole degrees as the field shows it)
        assert (m.pose.z_mm, m.pose.azimuth_deg) == (plain.pose.z_mm, plain.pose.azimuth_deg)
        assert m.pose.rotation_deg == pytest.approx(plain.pose.rotation_deg, abs=0.5)
    turned = (up.value("probe_rotation_deg") - 30.0 + 180.0) % 360.0 - 180.0
    assert 12.0 <= abs(turned) <= 22.0
    assert abs((side.value("probe_rotation_deg") - 30.0 + 180.0) % 360.0 - 180.0) < abs(turned) / 2
    up.set_param("probe_rotation_deg", 10.0)
    assert up.value("probe_rotation_deg") == pytest.approx(10.0, abs=0.01)
    assert up.state()["probe_display"]["rotation_deg"] == pytest.approx(10.0, abs=0.01)
    assert up.state()["patient"]["yaw_deg"] == 20.0
