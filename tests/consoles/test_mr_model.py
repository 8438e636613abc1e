"""MRModel without Qt: exam queue, Go/Stop in simulated time, refusals, series, parameter card, layout, dump."""
from __future__ import annotations

import json

import numpy as np
import pytest

from consoles.mr.model import CARD, CHOICES, PARAM, ConsoleActionError, MRModel
from consoles.mr.protocols import FOLDERS, PROTOCOLS, get_protocol, library_tree
from consoles.mr.row_params import RowParams, scan_time_s
from rendering.geometry import PlanePose, plane_angle_deg
from rendering.mr_physics import PRESETS
from rendering.subjects import load_runtime

# Small images keep the fast lane fast: what is tested is geometry and bookkeeping, not image quality.
SMALL = {"matrix": 64, "fov_read_mm": 320, "fov_phase_mm": 320}


@pytest.fixture(scope="module")
def rt():
    return load_runtime("dev")


def _model(rt, queue=None, seed=0, perturbations=None, **state):
    if queue is not None:
        state["queue"] = queue
    return MRModel(rt, "mr_test", seed, state, perturbations)


def _loc(status="pending"):
    return {"protocol": "localizer_3plane", "status": status, "params": {"matrix": 64}}


def _run(m, t0, t1, step):
    t = t0
    while t < t1 - 1e-9:
        m.on_clock(t, min(t1, t + step))
        t = min(t1, t + step)
    return t


def _uids(m):
    return [r.uid for r in m.rows]


# ---- protocol library ---------------------------------------------------------------------------------
def test_library_tree_holds_every_protocol_once_under_its_folder():
    tree = library_tree().to_dict()
    assert [f["label"] for f in tree["children"]] == list(FOLDERS)
    leaves = [(f["label"], c["protocol"]) for f in tree["children"] for c in f["children"]]
    assert sorted(pid for _, pid in leaves) == sorted(p.id for p in PROTOCOLS)
    assert all(get_protocol(pid).folder == folder for folder, pid in leaves)
    mapping = [get_protocol(pid) for folder, pid in leaves if folder == "Mapping"]
    assert mapping and all(p.acquirable and p.map_kind in ("t1", "t2") for p in mapping)
    assert all(p.acquirable for p in PROTOCOLS)


def test_protocol_sequences_come_from_the_physics_presets():
    assert get_protocol("cine_4ch").sequence(1.5) == PRESETS["cine_bssfp"]
    assert get_protocol("cine_4ch").sequence(3.0) == PRESETS["cine_bssfp_3t"]
    assert get_protocol("t2_haste_cor").sequence() == PRESETS["t2_haste"]
    assert get_protocol("t1_gre_tra").sequence().kind == "spoiled_gre"
    assert get_protocol("cine_sax").trigger == "ecg" and get_protocol("t2_tse_tra").trigger == "none"
    assert not get_protocol("localizer_3plane").needs_localizer and get_protocol("cine_2ch").needs_localizer
    with pytest.raises(KeyError):
        get_protocol("nope")


def test_scan_time_formulas():
    iso = (0.0, -110.0, -100.0)
    haste = get_protocol("t2_haste_cor")
    p = RowParams.from_protocol(haste, iso)
    assert scan_time_s(p, haste) == pytest.approx(3.0 + 25 * 1.4)  # one shot per slice
    p.averages = 2
    assert scan_time_s(p, haste) == pytest.approx(3.0 + 2 * 25 * 1.4)
    cine = get_protocol("cine_sax")
    c = RowParams.from_protocol(cine, iso)
    ny = c.phase_lines()
    beats = 10 * int(np.ceil(ny / 12))
    assert scan_time_s(c, cine, 60) == pytest.approx(3.0 + beats * 1.0, abs=0.05)
    assert scan_time_s(c, cine, 120) == pytest.approx(3.0 + beats * 0.5, abs=0.05)  # triggered: follows RR
    assert scan_time_s(c, cine, 120, signal=False) == scan_time_s(c, cine, 60)  # no signal: nominal 1 s cycle


# ---- queue operations ----------------------------------------------------------------------------------
def test_rename_strips_and_refuses_empty_or_long_names(rt):
    m = _model(rt)
    uid = m.row_at(3).uid
    m.rename(uid, "  4ch  ")
    assert m.row(uid).name == "4ch"
    for bad in ("   ", "x" * 41):
        with pytest.raises(ConsoleActionError):
            m.rename(uid, bad)
    assert m.row(uid).name == "4ch"
    assert m.events[-1]["event"] == "row_renamed" and m.events[-1]["name"] == "4ch"


def test_repeat_inserts_an_independent_copy_right_after_the_original(rt):
    m = _model(rt)
    src = m.row_at(2)
    m.open(src.uid)
    m.set_param("n_slices", 3)
    new = m.repeat(src.uid)
    assert _uids(m)[:3] == [m.row_at(1).uid, src.uid, new] and len(m.rows) == 5
    copy = m.row(new)
    assert copy.copy_of == src.uid and copy.status == "pending" and copy.name == src.name
    assert copy.params.to_dict() == src.params.to_dict()
    m.open(new)
    m.set_param("n_slices", 7)
    assert src.params.n_slices == 3 and copy.params.n_slices == 7  # a copy, not a shared object


def test_skip_toggles_and_is_refused_for_done_rows(rt):
    m = _model(rt, [_loc("done"), {"protocol": "cine_2ch"}])
    loc, cine = m.rows
    m.skip(cine.uid)
    assert cine.status == "skipped"
    m.skip(cine.uid)
    assert cine.status == "pending"
    with pytest.raises(ConsoleActionError, match="done"):
        m.skip(loc.uid)


def test_delete_and_move(rt):
    m = _model(rt)
    a, b, c, d = _uids(m)
    m.open(c)
    m.delete(c)
    assert _uids(m) == [a, b, d] and m.open_row is None
    m.move_down(a)
    assert _uids(m) == [b, a, d]
    m.move_up(d)
    assert _uids(m) == [b, d, a]
    with pytest.raises(ConsoleActionError, match="already first"):
        m.move_up(b)
    with pytest.raises(ConsoleActionError, match="already last"):
        m.move_down(a)
    assert [r["index"] for r in m.state()["queue"]] == [1, 2, 3]


def test_running_and_done_rows_cannot_be_deleted_or_moved(rt):
    m = _model(rt, [_loc(), {"protocol": "cine_2ch"}])
    loc, cine = _uids(m)
    m.go()
    with pytest.raises(ConsoleActionError, match="running"):
        m.delete(loc)
    with pytest.raises(ConsoleActionError, match="running"):
        m.move_down(loc)
    _run(m, 0.0, 20.0, 20.0)
    with pytest.raises(ConsoleActionError, match="acquired"):
        m.delete(loc)
    m.delete(cine)
    assert _uids(m) == [loc]


def test_add_protocol_appends_or_inserts(rt):
    m = _model(rt, [])
    a = m.add_protocol("localizer_3plane")
    b = m.add_protocol("t2_haste_cor")
    c = m.add_protocol("t1_gre_tra", position=1)
    assert _uids(m) == [a, c, b]
    assert m.row(c).name == "T1 spoiled GRE axial"
    with pytest.raises(ConsoleActionError):
        m.add_protocol("no_such_protocol")


# ---- Go ordering and refusals ----------------------------------------------------------------------------
def test_go_starts_the_open_row_else_the_first_pending(rt):
    m = _model(rt, [_loc("done"), {"protocol": "cine_2ch"}, {"protocol": "cine_4ch"}, {"protocol": "cine_sax"}])
    _, two, four, sax = _uids(m)
    m.skip(two)
    assert m.go_target().uid == four  # skipped rows are passed by
    m.open(sax)
    assert m.go() == sax and m.row(sax).status == "running"
    _run(m, 0.0, 200.0, 50.0)
    assert m.row(sax).status == "done"
    assert m.go_target().uid == four  # the open row is done: Go continues with the queue
    assert m.go() == four


def test_go_refused_without_a_localizer(rt):
    m = _model(rt, [{"protocol": "cine_4ch", "name": "4ch"}])
    assert not m.can_go()
    with pytest.raises(ConsoleActionError, match="acquire the localizer first") as exc:
        m.go()
    assert m.message == str(exc.value) and m.row_at(1).status == "pending"
    assert m.events[-1]["event"] == "go_refused"
    assert m.state()["go"] == {"ready": False, "reason": str(exc.value), "target": m.row_at(1).uid}


def test_go_refused_for_ecg_trigger_without_signal_until_trigger_is_none(rt):
    m = _model(rt, [_loc("done"), {"protocol": "cine_4ch"}], ecg_signal=False)
    with pytest.raises(ConsoleActionError, match="no ECG signal"):
        m.go()
    assert m.header()["heart_rate_bpm"] is None  # nothing to show without the ECG
    m.open(m.row_at(2).uid)
    m.set_param("trigger", "none")
    assert m.can_go()


def test_go_refused_on_a_parameter_conflict_with_the_reason_in_words(rt):
    m = _model(rt, [_loc("done"), {"protocol": "cine_2ch"}])
    m.open(m.row_at(2).uid)
    m.set_param("tr_ms", 3.0)
    m.set_param("te_ms", 2.1)
    assert m.message == "TR 3.0 ms is shorter than the minimum 4.2 ms for TE 2.1 ms."
    with pytest.raises(ConsoleActionError, match="TR 3.0 ms is shorter than the minimum 4.2 ms for TE 2.1 ms"):
        m.go()
    m.set_param("tr_ms", 4.2)
    assert m.can_go()


def test_trigger_window_longer_than_rr_blocks_go(rt):
    m = _model(rt, [_loc("done"), {"protocol": "cine_4ch"}], perturbations={"heart_rate_bpm": [100, 100]})
    assert m.heart_rate_bpm == 100
    assert "exceed the RR interval of 600 ms (heart rate 100 bpm)" in m.go_blocker()
    m.open(m.row_at(2).uid)
    m.set_param("acq_window_ms", 550)
    assert m.can_go()


def test_go_refused_while_scanning_and_with_nothing_pending(rt):
    m = _model(rt, [_loc(), {"protocol": "t1_map_molli"}, {"protocol": "t2_haste_cor", "params": SMALL}])
    m.go()
    with pytest.raises(ConsoleActionError, match="busy"):
        m.go()
    _run(m, 0.0, 20.0, 20.0)
    m.skip(m.row_at(2).uid)
    m.skip(m.row_at(3).uid)
    with pytest.raises(ConsoleActionError, match="no pending row"):
        m.go()


# ---- simulated time --------------------------------------------------------------------------------------
def test_status_and_remaining_time_while_running(rt):
    m = _model(rt, [_loc("done"), {"protocol": "t2_haste_cor", "name": "cor", "params": dict(SMALL, n_slices=4)}])
    uid = m.go()
    dur = m.duration_s(m.row(uid))
    assert dur == pytest.approx(3.0 + 4 * 1.4)
    m.on_clock(0.0, 2.0)
    h = m.header()
    assert h["scanner"] == {"status": "scanning", "row": uid, "name": "cor", "remaining_s": pytest.approx(dur - 2.0)}
    assert m.row(uid).status == "running" and m.series[-1].localizer  # no new series yet
    m.on_clock(2.0, dur - 0.01)
    assert m.row(uid).status == "running"
    m.on_clock(dur - 0.01, dur + 5)
    assert m.row(uid).status == "done" and m.header()["scanner"]["status"] == "idle"
    done = [e for e in m.events if e["event"] == "row_done"][-1]
    assert done["t"] == pytest.approx(dur)  # finished at its scheduled time, not at the end of the wait


def test_one_long_wait_equals_many_short_ones(rt):
    queue = [_loc(), {"protocol": "t2_haste_cor", "params": dict(SMALL, n_slices=2)}]
    a, b = _model(rt, queue), _model(rt, queue)
    for m in (a, b):
        m.go()
    t1 = a.duration_s(a.row_at(1)) + 1.0  # the localizer done
    a.on_clock(0.0, t1)
    _run(b, 0.0, t1, 0.25)
    for m in (a, b):
        m.go()
    a.on_clock(t1, t1 + 18.0)
    _run(b, t1, t1 + 18.0, 0.5)
    assert json.dumps(a.state(), sort_keys=True) == json.dumps(b.state(), sort_keys=True)
    assert np.array_equal(a.series[1].data.stack(), b.series[1].data.stack())


def test_stop_leaves_no_series_and_the_row_can_run_again(rt):
    m = _model(rt, [_loc("done"), {"protocol": "t2_haste_cor", "params": dict(SMALL, n_slices=2)}])
    uid = m.go()
    m.on_clock(0.0, 1.0)
    m.stop()
    assert m.row(uid).status == "stopped" and len(m.series) == 1
    m.on_clock(1.0, 30.0)  # the cancelled completion never fires
    assert m.row(uid).status == "stopped" and len(m.series) == 1
    with pytest.raises(ConsoleActionError, match="Nothing is running"):
        m.stop()
    m.open(uid)
    assert m.go() == uid
    m.on_clock(30.0, 60.0)
    assert m.row(uid).status == "done" and len(m.series) == 2


def test_initial_running_row_and_prior_series(rt):
    m = _model(rt, [_loc("done"), {"protocol": "t2_haste_cor", "status": "running", "remaining_s": 6.0,
                                    "params": dict(SMALL, n_slices=2)}])
    assert m.series[0].prior and m.series[0].localizer
    assert m.header()["scanner"]["status"] == "scanning" and m.remaining_s() == pytest.approx(6.0)
    assert not m.can_go()
    m.on_clock(0.0, 6.0)
    assert m.row_at(2).status == "done" and m.header()["scanner"]["status"] == "idle"


# ---- series --------------------------------------------------------------------------------------------
def test_localizer_series_is_three_orthogonal_stacks_about_the_isocentre(rt):
    stacks = get_protocol("localizer_3plane").localizer_stacks
    assert [n for n, _ in stacks] == [11, 11, 11]  # several parallel slices per plane (docs/visibility.md)
    m = _model(rt, [_loc()])
    m.go()
    assert m.duration_s(m.row_at(1)) == pytest.approx(5.0 + 33 * 64 * PRESETS["localizer_bssfp"].tr_ms / 1000, abs=0.05)
    m.on_clock(0.0, 60.0)
    s = m.state()["series"][0]
    assert s["localizer"] and s["n_images"] == 33
    iso = np.asarray(m.isocentre_mm, float)
    start = 0
    for (n, spacing), name, orient, axis in zip(stacks, ("sagittal", "coronal", "transverse"), "SCT", range(3)):
        ims = s["images"][start:start + n]
        start += n
        assert [im["name"] for im in ims] == [name] * n and {im["orientation"] for im in ims} == {orient}
        assert [(im["plane_slice"], im["plane_slices"]) for im in ims] == [(j + 1, n) for j in range(n)]
        centres = np.array([im["centre_mm"] for im in ims]) - iso
        off = [0, 1, 2]
        off.remove(axis)
        assert np.allclose(centres[:, off], 0.0, atol=1e-3)  # the stack runs along the plane's normal only
        assert np.allclose(np.abs(np.diff(centres[:, axis])), spacing, atol=1e-3)
        assert centres[n // 2] == pytest.approx([0.0, 0.0, 0.0], abs=1e-3)  # the middle slice: the isocentre
        assert all(im["shape"] == [64, 64] for im in ims)


def test_localizer_viewports_open_on_the_middle_slice_and_page_within_their_plane(rt):
    m = _model(rt, [_loc("done")])
    lay = m.state()["layout"]
    assert [(v["image_name"], v["plane_slice"], v["plane_slices"]) for v in lay["viewports"][:3]] == \
        [("sagittal", 6, 11), ("coronal", 6, 11), ("transverse", 6, 11)]
    assert m.slice_position(1) == "Cor P 0.0"  # the middle slice: through the isocentre
    m.page(1, -2)  # the wheel pages the coronal viewport through the coronal stack
    assert m.viewport_caption(1) == ["Localizer cor", "Image 4/11", "C"]
    assert m.slice_position(1) == "Cor A 30.0"  # two 15 mm steps down the stack
    m.page(1, -10)  # clamped at the plane's first slice, never into the sagittal stack
    assert m.viewport_caption(1) == ["Localizer cor", "Image 1/11", "C"]
    m.page(1, +30)
    assert m.viewport_caption(1) == ["Localizer cor", "Image 11/11", "C"]
    assert m.state()["layout"]["viewports"][1]["image_name"] == "coronal"


def test_series_image_count_and_geometry_follow_the_parameters(rt):
    m = _model(rt, [_loc("done"), {"protocol": "t2_haste_cor", "name": "kidneys", "params": dict(SMALL)}])
    m.open(m.row_at(2).uid)
    m.set_param("n_slices", 5)
    m.set_param("thickness_mm", 4.0)
    m.set_param("gap_mm", 1.0)
    m.set_param("pos_ap_mm", -90.0)
    m.set_param("tilt_a_deg", 20.0)  # coronal tilted towards transverse
    m.set_param("fov_phase_mm", 160)
    normal = m.row_at(2).params.normal()
    m.go()
    m.on_clock(0.0, 60.0)
    s = m.series[-1]
    assert s.n_images == 5 and s.name == "kidneys" and not s.localizer
    d = s.to_dict()
    centres = np.array([im["centre_mm"] for im in d["images"]])
    assert np.allclose(np.linalg.norm(np.diff(centres, axis=0), axis=1), 5.0, atol=1e-3)
    iso = m.isocentre_mm  # the Position fields are mm from the isocentre
    assert np.allclose(centres.mean(axis=0), [iso[0], iso[1] - 90.0, iso[2]], atol=1e-3)
    for im in s.data.images:
        assert plane_angle_deg(im.pose.normal, normal) < 1e-6
        assert im.pixels.shape == (32, 64)  # phase lines follow the FOV ratio at square pixels
    assert plane_angle_deg(normal, (0, 1, 0)) == pytest.approx(20.0)
    assert d["images"][0]["orientation"] == "C > T 20.0"


def test_repeated_row_gets_a_new_series_with_new_noise(rt):
    m = _model(rt, [_loc(), {"protocol": "t2_haste_cor", "params": dict(SMALL, n_slices=1)}])
    m.go()
    m.on_clock(0.0, 15.0)  # the localizer: 12.4 s at a 64 matrix
    m.go()
    m.on_clock(15.0, 25.0)
    m.repeat(m.row_at(2).uid)
    m.go()
    m.on_clock(25.0, 35.0)
    a, b = m.series[1], m.series[2]
    assert [r.status for r in m.rows] == ["done"] * 3 and b.row == m.row_at(3).uid
    assert a.to_dict()["images"][0]["centre_mm"] == b.to_dict()["images"][0]["centre_mm"]
    assert not np.array_equal(a.data.stack(), b.data.stack())


# ---- parameter card -------------------------------------------------------------------------------------
def test_parameters_clamp_and_round(rt):
    m = _model(rt, [_loc("done"), {"protocol": "t2_haste_cor"}])
    m.open(m.row_at(2).uid)
    assert m.set_param("n_slices", 100) == 64 and isinstance(m.row_at(2).params.n_slices, int)
    assert m.set_param("thickness_mm", 0.2) == 1.0
    assert m.set_param("thickness_mm", 5.44) == 5.4
    assert m.set_param("flip_deg", 400) == 180
    assert m.set_param("pos_fh_mm", -250.06) == pytest.approx(-250.1)
    assert m.row_at(2).params.centre_mm[2] == pytest.approx(-250.1 + m.isocentre_mm[2])  # mm from the isocentre
    assert PARAM["thickness_mm"].value(m) == 5.4
    with pytest.raises(ConsoleActionError):
        m.set_param("trigger", "respiratory")
    with pytest.raises(ConsoleActionError, match="Enter a number"):
        m.set_param("gap_mm", float("nan"))


def test_enable_rules_explain_why_a_field_is_greyed(rt):
    m = _model(rt, [_loc("done"), {"protocol": "cine_4ch"}, {"protocol": "t2_haste_cor"}])
    with pytest.raises(ConsoleActionError, match="Open a row"):
        m.set_param("tr_ms", 4.0)
    m.open(m.row_at(2).uid)  # cine: triggered, no inversion
    assert PARAM["ti_ms"].refusal(m) == "This sequence has no inversion pulse."
    assert PARAM["trigger_delay_ms"].enabled(m)
    m.set_param("trigger", "none")
    assert PARAM["trigger_delay_ms"].refusal(m) == "Set the trigger to ECG or pulse first."
    assert PARAM["heart_rate_bpm"].refusal(m) == "The heart rate is measured from the ECG."
    with pytest.raises(TypeError):
        PARAM["heart_rate_bpm"].commit(m, 80)  # read-only: no setter
    m.open(m.row_at(3).uid)  # HASTE: not triggered
    assert CHOICES["trigger"][1].reason(m) == "This sequence is not triggered."
    m.open(m.row_at(1).uid)  # the acquired localizer
    assert "repeat it" in PARAM["thickness_mm"].refusal(m)
    with pytest.raises(ConsoleActionError, match="repeat it"):
        m.set_param("averages", 2)
    m.open(m.repeat(m.row_at(1).uid))
    assert PARAM["thickness_mm"].enabled(m) and not PARAM["n_slices"].enabled(m)  # localizer: 3 fixed planes
    card = m.card()
    assert list(card) == list(CARD) and [f["name"] for f in card["Routine"]] == list(CARD["Routine"])
    assert next(f for f in card["Routine"] if f["name"] == "n_slices")["reason"].startswith("The localizer")


def test_editing_is_refused_while_the_row_runs(rt):
    m = _model(rt, [_loc()])
    m.open(m.go())
    with pytest.raises(ConsoleActionError, match="stop it"):
        m.set_param("thickness_mm", 5.0)


def test_scan_time_follows_parameters_and_heart_rate(rt):
    slow = _model(rt, [{"protocol": "cine_sax"}], perturbations={"heart_rate_bpm": [60, 60]})
    fast = _model(rt, [{"protocol": "cine_sax"}], perturbations={"heart_rate_bpm": [90, 90]})
    ds, df = (m.duration_s(m.row_at(1)) for m in (slow, fast))
    assert ds > df
    slow.open(slow.row_at(1).uid)
    slow.set_param("n_slices", 5)
    assert slow.duration_s(slow.row_at(1)) - 3.0 == pytest.approx((ds - 3.0) / 2, abs=0.1)
    assert slow.state()["queue"][0]["duration_s"] == slow.duration_s(slow.row_at(1))


def test_set_pose_round_trips_an_oblique_plane(rt):
    m = _model(rt, [_loc("done"), {"protocol": "cine_4ch"}])
    m.open(m.row_at(2).uid)
    pose = PlanePose.from_normal((12.0, -100.0, -95.0), (0.35, -0.3, 0.89), 25.0)
    m.set_pose(pose)
    back = m.row_at(2).params.pose()
    assert plane_angle_deg(back, pose) < 1e-3
    assert np.allclose(back.centre, pose.centre) and np.allclose(back.u, pose.u, atol=1e-4)
    assert m.events[-1]["event"] == "geometry_changed"


# ---- viewer layout ----------------------------------------------------------------------------------------
def test_localizer_fills_viewports_and_layout_operations(rt):
    m = _model(rt, [_loc("done"), {"protocol": "t2_haste_cor", "status": "done", "params": dict(SMALL, n_slices=4)}])
    lay = m.state()["layout"]
    assert [v["image_name"] for v in lay["viewports"][:3]] == ["sagittal", "coronal", "transverse"]
    assert lay["viewports"][3]["series"] is None and lay["active"] == 1
    m.load_series(3, 2)  # whole series: opens in the middle
    assert m.state()["layout"]["viewports"][3]["image"] == 3
    m.page(3, +5)
    assert m.viewport_image[3] == 3  # clamped at the last image
    m.page(3, -10)
    assert m.viewport_image[3] == 0
    m.move_viewport_content(2, 1)  # drag the transverse localizer onto viewport 2
    v2 = m.state()["layout"]["viewports"][1]
    assert (v2["series"], v2["image_name"], v2["orientation"]) == (1, "transverse", "T")
    m.activate_viewport(1)
    m.set_graphics_mode("outer")
    m.set_shim_box_visible(True)
    lay = m.state()["layout"]
    assert (lay["active"], lay["graphics_mode"], lay["shim_box_visible"]) == (2, "outer", True)
    with pytest.raises(ConsoleActionError):
        m.set_graphics_mode("some")
    m.set_layout("1x1")  # 1x1 shows the active viewport (issue 24), not always viewport 1
    lay = m.state()["layout"]
    assert lay["active"] == 2 and [v["index"] for v in lay["viewports"] if v["visible"]] == [2]
    with pytest.raises(ConsoleActionError, match="not shown"):
        m.activate_viewport(0)
    m.set_layout("2x2")  # hidden viewports kept their contents
    assert m.state()["layout"]["viewports"][1]["image_name"] == "transverse"


def test_initial_layout_and_image_selection(rt):
    m = _model(rt, [_loc("done")], layout={"layout": "1x2", "viewports": [{"row": 1, "image": 3}, None],
                                             "active": 2, "graphics_mode": "off"})
    lay = m.state()["layout"]
    assert lay["layout"] == "1x2" and lay["active"] == 2 and lay["graphics_mode"] == "off"
    assert lay["viewports"][0]["image_name"] == "transverse" and lay["viewports"][1]["series"] is None
    m.select_image(1, 1)
    assert m.state()["selected_image"] == {"series": 1, "image": 2}
    with pytest.raises(ConsoleActionError):
        m.select_image(1, 33)  # 3 x 11 slices


# ---- dump ------------------------------------------------------------------------------------------------
def _episode(rt, seed):
    m = _model(rt, [_loc(), {"protocol": "cine_4ch", "params": SMALL}], seed=seed,
               perturbations={"heart_rate_bpm": [55, 95]})
    m.go()
    m.on_clock(0.0, 15.0)  # the localizer: 12.4 s at a 64 matrix
    m.open(m.row_at(2).uid)
    m.set_param("acq_window_ms", 500)
    m.go()
    m.on_clock(15.0, 30.0)
    return m


def test_state_dump_is_deterministic_and_json_serialisable(rt):
    a, b = _episode(rt, 3), _episode(rt, 3)
    ja = json.dumps(a.state(), sort_keys=True, allow_nan=False)
    assert ja == json.dumps(b.state(), sort_keys=True, allow_nan=False)
    assert np.array_equal(a.series[1].data.stack(), b.series[1].data.stack())
    assert json.loads(ja)["queue"][1]["status"] == "done"
    rates = {_model(rt, [], seed=s, perturbations={"heart_rate_bpm": [55, 95]}).heart_rate_bpm for s in range(8)}
    assert len(rates) > 1  # the heart rate is drawn per episode


def test_state_dump_holds_what_an_oracle_reads(rt):
    m = _episode(rt, 0)
    s = m.state()
    row = s["queue"][1]
    assert {"uid", "index", "name", "status", "duration_s", "conflicts", "params"} <= set(row)
    assert row["params"]["trigger"] == "ecg" and row["params"]["orientation"].startswith("T")
    assert s["header"]["scanner"]["status"] == "idle" and s["header"]["heart_rate_bpm"] == m.heart_rate_bpm
    assert [e["event"] for e in s["events"]].count("row_done") == 2
    assert s["series"][1]["row"] == row["uid"] and s["series"][1]["n_images"] == 1


# ---- the API the view binds: per-viewport graphics, series list, captions, indication, start ------------
def test_graphics_mode_is_per_viewport(rt):
    m = _model(rt, [_loc("done")])
    m.set_graphics_mode("outer")  # the active viewport (1)
    m.set_graphics_mode("off", 2)
    assert [m.graphics_mode(i) for i in range(4)] == ["outer", "all", "off", "all"]
    vps = m.state()["layout"]["viewports"]
    assert [v["graphics_mode"] for v in vps] == ["outer", "all", "off", "all"]
    assert m.events[-1] == {"t": 0.0, "event": "graphics_mode_set", "viewport": 3, "mode": "off"}
    m.load_series(2, 1, 0)  # new content keeps the viewport's mode
    assert m.graphics_mode(2) == "off"
    m.set_layout("1x2")
    with pytest.raises(ConsoleActionError, match="not shown"):
        m.set_graphics_mode("all", 3)


def test_series_list_entries_thumbnails_load_and_select(rt):
    m = _model(rt, [_loc("done"), {"protocol": "t2_haste_cor", "status": "done", "name": "cor T2",
                                   "params": dict(SMALL, n_slices=4)}])
    entries = m.series_entries()
    assert [e.key for e in entries] == ["1.1", "1.2", "1.3", "2"]
    assert [e.title for e in entries] == ["1  Localizer sag", "1  Localizer cor", "1  Localizer tra", "2  cor T2"]
    # one entry per plane, on its middle slice (images 6, 17, 28 of the 33)
    assert [e.count_text for e in entries] == ["11 slices"] * 3 + ["4 images"] and entries[1].image == 16
    assert m.entry_image("1.3") is m.series[0].data[27] and m.entry_image("2") is m.series[1].data[2]
    m.load_entry(3, "1.2")
    assert m.viewport_caption(3) == ["Localizer cor", "Image 6/11", "C"]
    m.load_entry(3, "2")
    assert m.viewport_caption(3) == ["cor T2", "Image 3/4", "C"]
    m.set_layout("1x1")
    assert m.viewport_caption(0) == ["Localizer sag", "Image 6/11", "S"]
    m.select_entry("1.3")
    st = m.state()
    assert st["selected_image"] == {"series": 1, "image": 28} and st["selected_entry"] == "1.3"
    m.select_entry("2")
    assert m.state()["selected_image"] == {"series": 2, "image": None}
    with pytest.raises(ConsoleActionError):
        m.select_entry("1.4")


def test_hidden_labels_list_localizer_images_in_seeded_order_without_names(rt):
    orders = set()
    for seed in range(6):
        m = _model(rt, [_loc("done")], seed=seed, labels_hidden=True, autoload_localizer=False,
                   perturbations={"localizer_order": [[1, 2, 3], [2, 3, 1], [3, 1, 2]]})
        entries = m.series_entries()
        assert [e.title for e in entries] == ["Image 1", "Image 2", "Image 3"]
        orders.add(tuple(e.image for e in entries))
        m.load_entry(0, entries[1].key)
        cap = m.viewport_caption(0)
        assert cap == ["Image 2", "6/11"]
        assert not any(w in " ".join(cap + [e.title for e in entries]).lower() for w in ("sag", "cor", "tra"))
        assert m.viewport_caption(1) == []
    assert orders == {(5, 16, 27), (16, 27, 5), (27, 5, 16)}  # balanced: each order once in seeds 0-2 and 3-5


def test_balanced_choice_takes_every_option_once_per_block():
    from consoles.mr.model import balanced_choice

    picks = [balanced_choice("t", "s01", seed, "k", ["a", "b"]) for seed in range(20)]
    assert all(sorted(picks[i:i + 2]) == ["a", "b"] for i in range(0, 20, 2))
    assert picks != ["a", "b"] * 10 and picks != ["b", "a"] * 10  # seeded order, not alternation


def test_indication_start_snapshot_shuffled_rows_and_seeded_names(rt):
    queue = [_loc("done"), {"protocol": "cine_2ch", "names": ["2ch", "VLA cine"]}, {"protocol": "cine_4ch"},
             {"protocol": "cine_sax"}]
    firsts = set()
    for seed in range(6):
        m = _model(rt, queue, seed=seed, open=3, perturbations={"shuffle_rows": [2, 3, 4],
                                                                "indication": ["LV function", "valves"]})
        st = m.state()
        assert st["header"]["indication"] == m.indication in ("LV function", "valves")
        assert m.rows[0].protocol == "localizer_3plane"
        assert sorted(r.protocol for r in m.rows[1:]) == ["cine_2ch", "cine_4ch", "cine_sax"]
        firsts.add(m.rows[1].protocol)
        assert m.open_row.protocol == "cine_4ch"  # "open" names the card's row wherever it went
        assert [q["name"] for q in st["start"]["queue"]] == [r.name for r in m.rows]
        assert next(r.name for r in m.rows if r.protocol == "cine_2ch") in ("2ch", "VLA cine")
        m.rename(m.rows[1].uid, "x")
        assert st["start"]["queue"][1]["name"] != "x" and m.state()["start"] == st["start"]
    assert len(firsts) > 1


def test_running_row_becomes_done_when_the_scanner_is_drawn_idle(rt):
    queue = [_loc("done"), {"protocol": "cine_2ch", "status": "running", "params": SMALL}, {"protocol": "cine_4ch"}]
    busy = []
    for seed in range(4):
        m = _model(rt, queue, seed=seed, perturbations={"scanner_busy": [True, False],
                                                        "running_remaining_s": [35, 90]})
        busy.append(m.running_row is not None)
        if m.running_row is not None:
            assert 35 <= m.remaining_s() <= 90
        else:
            assert m.rows[1].status == "done" and m.can_go()
    assert sorted(busy) == [False, False, True, True]


def test_cover_labels_fits_or_clips_a_prior_coronal_series(rt):
    queue = [_loc("done"), {"protocol": "t2_haste_cor", "status": "done", "cover_labels": ["kidney_"],
                            "params": {"fov_phase_mm": 300, "matrix": 64}}]
    lo, hi = _model(rt, [])._label_box(["kidney_"])
    seen = set()
    for seed in range(4):
        m = _model(rt, queue, seed=seed, perturbations={"prior_clipped": [False, True], "prior_clip_mm": [18, 30]})
        p = m.rows[1].params
        top, bottom = p.centre_mm[2] + 150, p.centre_mm[2] - 150
        inside = bottom <= lo[2] and hi[2] <= top
        assert inside != m.prior_clipped
        if m.prior_clipped:
            assert 18 - 1e-6 <= max(hi[2] - top, bottom - lo[2]) <= 30 + 1e-6
        seen.add(m.prior_clipped)
        assert m.state()["start"]["prior_clipped"] == m.prior_clipped
    assert seen == {False, True}


# ---- planning tasks' seeded initial state --------------------------------------------------------------
def test_plan_error_tilts_and_shifts_a_row_by_the_drawn_amounts(rt):
    queue = [_loc("done"), {"protocol": "cine_2ch", "plan_error": True}, {"protocol": "cine_4ch"}]
    m = _model(rt, queue, perturbations={"plan_tilt_deg": [12, 12], "plan_shift_mm": [9, 9]})
    plain = _model(rt, queue[:1] + [{"protocol": "cine_2ch"}, {"protocol": "cine_4ch"}])
    a, b = m.rows[1].params, plain.rows[1].params
    turned = np.degrees(np.arccos(min(1.0, abs(float(a.normal() @ b.normal())))))
    assert turned == pytest.approx(12.0, abs=0.01)
    assert np.linalg.norm(np.subtract(a.centre_mm, b.centre_mm)) == pytest.approx(9.0, abs=0.01)
    assert m.rows[2].params == plain.rows[2].params  # only the flagged row
    assert m.state()["start"]["seeded"]["plan_errors"] == {"2": {"tilt_deg": 12.0, "shift_mm": 9.0}}
    other = _model(rt, queue, seed=1, perturbations={"plan_tilt_deg": [12, 12], "plan_shift_mm": [9, 9]})
    assert other.rows[1].params.normal().tolist() != a.normal().tolist()  # seeded directions


def test_coverage_fault_spoils_the_drawn_parameter_of_a_fitted_pending_row(rt):
    queue = [_loc("done"), {"protocol": "t2_haste_cor", "cover_labels": ["kidney_"], "coverage_fault": True,
                            "params": SMALL}]
    seen = {}
    for seed in range(3):
        m = _model(rt, queue, seed=seed, landmark="kidneys",
                   perturbations={"coverage_fault": ["n_slices", "thickness_mm", "fov_phase_mm"]})
        s = m.state()["start"]["seeded"]
        fitted = _model(rt, [_loc("done"), {"protocol": "t2_haste_cor", "cover_labels": ["kidney_"], "params": SMALL}],
                        landmark="kidneys").rows[1].params
        assert s["coverage_fault_from"] == getattr(fitted, s["coverage_fault"]) > s["coverage_fault_to"]
        assert m.rows[1].status == "pending" and m.series[-1].localizer  # nothing acquired for the row
        seen[s["coverage_fault"]] = seed
    assert sorted(seen) == ["fov_phase_mm", "n_slices", "thickness_mm"]  # balanced over three seeds


def test_prior_clipped_in_the_initial_state_records_the_clipped_end(rt):
    queue = [_loc("done"), {"protocol": "t2_haste_cor", "status": "done", "cover_labels": ["kidney_"], "params": SMALL}]
    m = _model(rt, queue, landmark="kidneys", prior_clipped=True)
    assert m.prior_clipped and m.state()["start"]["seeded"]["prior_clip_end"] in ("upper", "lower")
    assert "prior_clip_end" not in _model(rt, queue, landmark="kidneys").state()["start"]["seeded"]


# ---- mapping tasks' staging (issue 12) ---------------------------------------------------------------------
MAP_QUEUE = [{"protocol": "localizer_3plane", "status": "done", "params": {"matrix": 64}},
             {"protocol": "t1_map_molli", "mid_sax": True, "mapping_fault": True},
             {"protocol": "t2_map_t2prep", "mid_sax": True, "mapping_fault": True}]
FAULTS = ["none", "shim_off_heart", "window_exceeds_rr", "basal_slice"]


def test_mapping_fault_is_balanced_over_seeds_and_spoils_both_rows(rt):
    seen = []
    for seed in range(4):
        m = _model(rt, MAP_QUEUE, seed=seed, perturbations={"mapping_fault": FAULTS})
        seen.append(m.mapping_fault)
        assert m.start["seeded"]["mapping_fault"] == m.mapping_fault
        assert m.start["seeded"]["mapping_fault_rows"] == [m.rows[1].uid, m.rows[2].uid]
        clean = _model(rt, MAP_QUEUE[:2], seed=seed).rows[1].params  # no fault drawn: planned mid SAX
        p = m.rows[1].params
        if m.mapping_fault == "shim_off_heart":
            assert p.shim_size_mm == (90.0, 90.0, 60.0) and p.shim_centre_mm is not None
        elif m.mapping_fault == "window_exceeds_rr":
            assert p.trigger_delay_ms + p.acq_window_ms > 60000.0 / m.heart_rate_bpm
            assert m.row_conflicts(m.rows[1]) == [] and m.can_go()  # a warning, not a blocker
        elif m.mapping_fault == "basal_slice":
            axis, _, lo, hi = m._lv_axis()
            shift = (np.asarray(p.centre_mm) - np.asarray(clean.centre_mm)) @ axis
            assert shift == pytest.approx(-0.3 * (hi - lo), abs=0.5)
        else:
            assert p.to_dict() == clean.to_dict()
    assert sorted(seen) == sorted(FAULTS)


LIBRARY_FAULTS = ["none", "shim_off_heart", "window_exceeds_rr", "untriggered"]


def test_library_mapping_fault_spoils_every_added_mapping_row_and_nothing_else(rt):
    seen = []
    for seed in range(4):
        m = _model(rt, [], seed=seed, perturbations={"mapping_fault": LIBRARY_FAULTS}, library_mapping_fault=True)
        clean = _model(rt, [], seed=seed)
        seen.append(m.mapping_fault)
        assert m.start["seeded"] == {"mapping_fault": m.mapping_fault, "mapping_fault_source": "library"}
        for pid in ("localizer_3plane", "t1_map_molli", "t2_map_t2prep", "t1_map_molli"):
            got, ref = (x.row(x.add_protocol(pid)).params for x in (m, clean))
            if pid == "localizer_3plane" or m.mapping_fault == "none":
                assert got.to_dict() == ref.to_dict(), (pid, m.mapping_fault)
            elif m.mapping_fault == "shim_off_heart":
                assert got.shim_size_mm == (90.0, 90.0, 60.0) and ref.shim_size_mm is None
            elif m.mapping_fault == "window_exceeds_rr":
                assert got.trigger_delay_ms + got.acq_window_ms > 60000.0 / m.heart_rate_bpm
            else:
                assert got.trigger == "none" and ref.trigger == "ecg"
        assert m.start["seeded"] == {"mapping_fault": m.mapping_fault, "mapping_fault_source": "library"}
    assert sorted(seen) == sorted(LIBRARY_FAULTS)


def test_library_plan_error_starts_every_added_mapping_row_from_a_saved_plan(rt):
    pert = {"plan_tilt_deg": [14, 25], "plan_shift_mm": [10, 30]}
    m = _model(rt, [], seed=1, perturbations=pert, library_plan_error=True)
    clean = _model(rt, [], seed=1)
    saved = m.start["seeded"]["library_plans"]
    assert sorted(saved) == ["t1_map_molli", "t2_map_t2prep"]
    for pid in ("t1_map_molli", "t2_map_t2prep"):
        got, ref = (x.row(x.add_protocol(pid)).params for x in (m, clean))
        tilt = np.degrees(np.arccos(min(1.0, abs(float(got.normal() @ ref.normal())))))
        shift = float(np.linalg.norm(np.subtract(got.centre_mm, ref.centre_mm)))
        assert tilt == pytest.approx(saved[pid]["tilt_deg"], abs=0.05) and 14.0 <= tilt <= 25.0
        assert shift == pytest.approx(saved[pid]["shift_mm"], abs=0.05) and 10.0 <= shift <= 30.0
        assert np.allclose(got.normal(), saved[pid]["normal"], atol=1e-5)
    # drawn once per episode: a second row of a protocol starts from the same plan
    again = m.row(m.add_protocol("t1_map_molli")).params
    assert np.allclose(again.normal(), saved["t1_map_molli"]["normal"], atol=1e-5)
    assert _model(rt, [], seed=1, perturbations=pert, library_plan_error=True).start["seeded"] == m.start["seeded"]


def test_staged_fault_amounts_are_drawn_and_a_heart_shim_is_fitted(rt):
    queue = [dict(r, heart_shim=True) if r.get("mid_sax") else r for r in MAP_QUEUE]
    pert = {"mapping_fault": ["shim_off_heart", "basal_slice", "none"], "shim_fault_offset_mm": [100, 140],
            "basal_fault_share": [0.35, 0.45], "cohort_balanced": ["mapping_fault"]}
    offsets = []
    for seed in range(3):
        m = _model(rt, queue, seed=seed, perturbations=pert)
        p = m.rows[1].params
        if m.mapping_fault == "shim_off_heart":
            r = float(np.hypot(*m.shim_fault_offset_mm[:2]))
            assert 100.0 <= r <= 140.0 and m.start["seeded"]["shim_fault_offset_mm"] == list(m.shim_fault_offset_mm)
            assert p.shim_size_mm == (90.0, 90.0, 60.0)
            offsets.append(m.shim_fault_offset_mm)
        elif m.mapping_fault == "basal_slice":
            assert 0.35 <= m.start["seeded"]["basal_fault_share"] <= 0.45
        else:  # a clean staged row is shimmed over the heart: a box a little larger than the heart
            size = np.asarray(p.shim_size_mm)
            assert p.shim_centre_mm is not None and np.all(size > 40.0) and np.all(size < 200.0)
    assert offsets  # the shim fault came up in three seeds (balanced)


def test_stop_fault_stops_the_running_row_partway_and_go_resumes_it(rt):
    queue = [{"protocol": "localizer_3plane", "status": "done", "params": {"matrix": 64}},
             {"protocol": "cine_4ch", "status": "running", "remaining_s": 40, "stop_fault": True},
             {"protocol": "cine_2ch"}]
    m = _model(rt, queue, perturbations={"stop_fault_fraction": [0.4, 0.6]})
    row = m.rows[1]
    t_fault = m.start["seeded"]["stop_fault_t"]
    assert m.start["seeded"]["stop_fault_row"] == row.uid and 16.0 <= t_fault <= 24.0
    m.on_clock(0.0, 45.0)
    assert row.status == "stopped" and row.series is None and "RF amplifier fault" in m.message
    assert [e for e in m.events if e["event"] == "row_fault_stopped"][0]["row"] == row.uid
    assert m.go_target().uid == m.rows[2].uid  # Go alone would run the next pending row
    m.open(row.uid)
    m.go()
    m.on_clock(45.0, 45.0 + m.duration_s(row) + 1.0)
    assert row.status == "done" and row.series is not None  # the fault happens once
