"""The correct answer of an ultrasound episode as named parts (issue 21: how far it moves between episodes).

Moved out of scoring/registry/us.py so the registry stays plain data: the hook reads the registry's
thresholds and the ultrasound oracle's measures.
"""
from __future__ import annotations

from scoring.registry.us import (DEPTH_MARGIN_MAX_MM, DEPTH_MARGIN_MIN_MM, FOCUS_MAX_OFF_MM, HILUM_MAX_MM,
                                 KIDNEY_GREY_RANGE, LONG_AXIS_MAX_DEG, LONG_AXIS_MIN_LENGTH_FRACTION, USTask)


# ---- the episode's correct answer (issue 21: how far it moves between episodes) ----------------------
def _gain_window(state: dict, side: str) -> tuple[float, float] | None:
    """The gain interval (0-100) whose image of the end state shows the kidney inside KIDNEY_GREY_RANGE:
    the beam shifted in dB as the gain control shifts it, re-displayed (the oracle's own brightness
    measure); None when the kidney is not on the image."""
    from dataclasses import replace

    import numpy as np

    from rendering import us_image as U
    from rendering.us_physics import GAIN_DB_PER_UNIT, GAIN_RANGE
    from scoring.oracles.us import shown, shown_frame
    from scoring.subject_oracle import load_oracle

    oracle = load_oracle(state["subject"])
    fr = shown_frame(oracle, shown(state), state["image"]["shape"])
    sel = np.isin(fr.labels, oracle.organ_labels(f"kidney_{side}"))
    if not sel.any():
        return None
    g0 = float(state["controls"]["gain"])

    def grey(g: float) -> float:
        beam = replace(fr.beam, db=fr.beam.db + np.float32((g - g0) * GAIN_DB_PER_UNIT))
        return float(U.display_frame(beam, fr.display).pixels[sel].mean())

    def crossing(level: float) -> float:  # grey rises with gain: bisection to 0.1 unit
        lo, hi = GAIN_RANGE
        for _ in range(10):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if grey(mid) < level else (lo, mid)
        return 0.5 * (lo + hi)

    return crossing(KIDNEY_GREY_RANGE[0]), crossing(KIDNEY_GREY_RANGE[1])


def _view_holds(oracle, side: str, pose: dict, depth_mm: float) -> bool:
    """The long-axis oracle's three checks (scoring.oracles.us.view) for a probe pose (subject frame)."""
    from rendering import us_image as U
    from scoring.oracles.us import view_measures

    try:
        plane = U.ProbeGeometry.from_pose(oracle.runtime, U.ProbePose.from_dict(pose)).to_dict()
    except ValueError:  # off the body
        return False
    vm = view_measures(oracle, side, plane, depth_mm)
    return (vm["angle_to_long_axis_deg"] <= LONG_AXIS_MAX_DEG and vm["length_fraction"] >= LONG_AXIS_MIN_LENGTH_FRACTION
            and vm["hilum_off_plane_mm"] <= HILUM_MAX_MM and vm["hilum_in_sector"])


def _field_tolerance(oracle, side: str, pose: dict, depth_mm: float, field: str, step: float, limit: float) -> float:
    """How far one pose field can move from the reference's pose, each way, with the view still passing the
    oracle (searched in `step`s up to `limit`): the mean of the two one-sided ranges."""
    ranges = []
    for sgn in (1.0, -1.0):
        d = 0.0
        while d < limit and _view_holds(oracle, side, {**pose, field: float(pose[field]) + sgn * (d + step)}, depth_mm):
            d += step
        ranges.append(d)
    return max(step, 0.5 * (ranges[0] + ranges[1]))


def _signed_deg(deg: float) -> float:
    """An angle of a dial that turns round, as -180..180 deg."""
    return (float(deg) + 180.0) % 360.0 - 180.0


def answers(task: USTask, state: dict, ops: list) -> dict:
    """The correct answer of one reference episode as named parts (runner.headless.shortcut.Answer), each
    numeric part with the oracle's tolerance for it in the same unit (from this module's thresholds and
    the episode's geometry, never from the solver's results):

    - long_axis: the probe pose of the long-axis view as the console's fields show it (probe_display:
      height along the bed, position around the body in the bed frame, rotation), each with the range
      over which that field alone can move from the reference's pose and the view still pass the oracle's
      three checks (the mean of the two one-sided ranges, searched on the subject's geometry).
    - optimize: depth (mm): the centre and half-width of the depths the oracle accepts for the kidney's
      bottom (DEPTH_MARGIN_MIN_MM .. DEPTH_MARGIN_MAX_MM below it); focus (mm): the
      kidney's centre depth, FOCUS_MAX_OFF_MM; gain: the centre and half-width of the gain window that
      shows the kidney inside KIDNEY_GREY_RANGE; whether the probe had to be turned round (categorical: its
      marker started towards the feet).
    - contact_vs_gain: the cause (categorical); when it is the gain, the gain window as above.
    Other kinds (L0-L2 controls, measure, save): no parts."""
    from scoring.answers import Answer

    out: dict = {}
    side = (state.get("exam") or {}).get("kidney")
    if task.kind == "long_axis":
        from scoring.subject_oracle import load_oracle

        oracle = load_oracle(state["subject"])
        shown_pose = state.get("probe_display") or state["pose"]
        depth = float(state["controls"]["depth_mm"])
        pose = state["pose"]  # the subject frame: a bed-frame field moves it by the same amount
        out["probe_z_mm"] = Answer(float(shown_pose["z_mm"]),
                                   _field_tolerance(oracle, side, pose, depth, "z_mm", 2.5, 80.0))
        out["probe_azimuth_deg"] = Answer(float(shown_pose["azimuth_deg"]),
                                          _field_tolerance(oracle, side, pose, depth, "azimuth_deg", 1.0, 40.0))
        # the dial turns round: the answer as a signed angle (-180..180), so 358 and 2 lie 4 deg apart
        out["probe_rotation_deg"] = Answer(round(_signed_deg(shown_pose["rotation_deg"]), 3),
                                           _field_tolerance(oracle, side, pose, depth, "rotation_deg", 1.0, 40.0))
    elif task.kind == "optimize":
        from scoring.subject_oracle import load_oracle
        from scoring.oracles.us import image_quality

        q = image_quality(load_oracle(state["subject"]), side, state)
        b = float(q["kidney_bottom_mm"])
        lo, hi = b + DEPTH_MARGIN_MIN_MM, b + DEPTH_MARGIN_MAX_MM
        out["depth_mm"] = Answer(round(0.5 * (lo + hi), 2), round(0.5 * (hi - lo), 2))
        out["focus_mm"] = Answer(float(q["kidney_centre_mm"]), FOCUS_MAX_OFF_MM)
        w = _gain_window(state, side)
        if w is not None:
            out["gain"] = Answer(round(0.5 * (w[0] + w[1]), 2), round(0.5 * (w[1] - w[0]), 2))
        # whether the probe has to be turned round (the episode started with it turned about its beam by more
        # than a quarter turn from the aimed view, the marker towards the feet): a choice
        turn = _signed_deg(state["patient"].get("aim_rotation_deg", 0.0))
        out["turn_probe_round"] = Answer("yes" if abs(turn) > 90.0 else "no")
    elif task.kind == "contact_vs_gain":
        out["cause"] = Answer(str(state["start"]["dark_cause"]))
    return out
