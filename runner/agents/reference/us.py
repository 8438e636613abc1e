"""Reference solver for the ultrasound tasks: targets from the hidden anatomy, acts like any agent.

Two layers, as for CT and MR. `USPlanner` is pure: from the console's state dump, the task's registry entry
(scoring/registry/us.py) and the subject oracle's kidney it decides the next console operation (`Op`,
named after the USModel method: set_param, set_preset, freeze, caliper_point, add_annotation, save_image,
save_clip, apply_gel, wait, done). Its targets come from the oracle's own measures (scoring/oracles/us.py):

- the long-axis pose: the kidney's principal axis and hilum (kidney_anatomy) turned into a probe pose by
  consoles/us/aim.py, which inverts the very geometry the console images with (ProbeGeometry.from_pose);
- depth, focus and gain: the kidney's depths on the current image plane (image_quality) and the gain whose
  re-formed image shows the kidney at mid grey (the oracle's brightness range);
- the caliper: the poles of the kidney as the frozen image cuts it (kidney_section).

`USReferenceSolver` performs each operation through the console's widgets (names in its docstring); the
headless driver (runner/headless/us.py) calls the model's methods directly.
"""
from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import numpy as np

from runner.agents.reference.common import Op, PlannerBase, centre, click, replace_text, wait
from scoring.registry.us import (CONTACT_MIN_FRACTION, CONTACT_MIN_LINE_MEAN, KIDNEY_GREY_RANGE, USTask)
from tasks.card import TaskCard

# The planner's own aims inside the oracle's bounds (the bounds are the registry's; these are where a
# careful sonographer would aim, well inside them).
DEPTH_BELOW_KIDNEY_MM = 20.0  # "a little space below the kidney"
GREY_TARGET = 0.5 * (KIDNEY_GREY_RANGE[0] + KIDNEY_GREY_RANGE[1])
GREY_SLACK = 12.0  # close enough to the aim once the gain has been set: no further step
GOOD_PRESSURE_PCT = 85.0  # a firm hold: the array's whole arc indents the skin
PRESSURE_STEP_PCT = 10.0  # still lifting at the edges: press harder
POSE_FIELDS = (("probe_z_mm", "z_mm", 0.06), ("probe_azimuth_deg", "azimuth_deg", 0.06),
               ("probe_rotation_deg", "rotation_deg", 0.5), ("probe_tilt_deg", "tilt_deg", 0.5),
               ("probe_rock_deg", "rock_deg", 0.5))
DECIMALS = {"probe_z_mm": 1, "probe_azimuth_deg": 1, "probe_rotation_deg": 0, "probe_tilt_deg": 0,
            "probe_rock_deg": 0, "pressure_pct": 0, "depth_cm": 1, "focus_cm": 1, "gain": 0,
            "frequency_mhz": 1, "dynamic_range_db": 0}


def _value(name: str, v: float) -> float:
    return round(float(v), DECIMALS.get(name, 1))


class USPlanner(PlannerBase):
    """The next operation for one ultrasound task on one subject (pure: state dicts in, Ops out)."""

    task: USTask

    def __init__(self, card: TaskCard, subject: str, oracle=None) -> None:
        super().__init__(card, subject, oracle)
        self._target_pose: dict[str, float] | None = None

    # ---- targets -------------------------------------------------------------------------------------
    @staticmethod
    def side(st: dict[str, Any]) -> str:
        return st["exam"]["kidney"]

    def long_axis_pose(self, st: dict[str, Any]) -> dict[str, float]:
        """The pose of the kidney's long-axis view through its hilum as the probe fields show it (bed frame,
        rounded as the fields commit it)."""
        if self._target_pose is None:
            from consoles.us.aim import long_axis_pose
            from consoles.us.bed import rotation_offset_deg
            from scoring.oracles.us import kidney_anatomy

            side = self.side(st)
            an = kidney_anatomy(self.oracle, side)
            pose = long_axis_pose(self.oracle.runtime, an["centre"], an["axis"], an["hilum"], side,
                                  pressure=st["pose"]["pressure"])
            # the fields take bed-frame values: the patient's place on the bed (the dump's "patient"; + roll:
            # the left side up, bed angle = body angle - roll)
            # and turned yaw on it: the rotation is read from the bed's head direction, consoles/us/bed.py)
            pt = st["patient"]
            bed = {"z_mm": pt["z_offset_mm"], "azimuth_deg": -pt["roll_deg"],
                   "rotation_deg": rotation_offset_deg(self.oracle.runtime, pose.z_mm, pose.azimuth_deg,
                                                       pt["roll_deg"], pt.get("yaw_deg", 0.0))}
            self._target_pose = {f: _value(name, getattr(pose, f) + bed.get(f, 0.0)) for name, f, _ in POSE_FIELDS}
            self._target_pose["rotation_deg"] %= 360.0
        return self._target_pose

    def gain_for_grey(self, st: dict[str, Any]) -> float:
        """The gain (0-100, whole units) whose image shows the kidney closest to GREY_TARGET: the beam is
        acquired once and shifted in dB (gain is an offset before compression), then re-displayed."""
        from rendering import us_image as U
        from rendering.us_physics import GAIN_DB_PER_UNIT, GAIN_RANGE
        from scoring.oracles.us import shown, shown_frame

        fr = shown_frame(self.oracle, shown(st), st["image"]["shape"])
        sel = np.isin(fr.labels, self.oracle.organ_labels(f"kidney_{self.side(st)}"))
        g0 = float(st["controls"]["gain"])

        def grey(g: float) -> float:
            beam = replace(fr.beam, db=fr.beam.db + np.float32((g - g0) * GAIN_DB_PER_UNIT))
            return float(U.display_frame(beam, fr.display).pixels[sel].mean()) if sel.any() else 0.0

        lo, hi = GAIN_RANGE
        for _ in range(12):  # grey rises with gain: bisection to a unit
            mid = 0.5 * (lo + hi)
            if grey(mid) < GREY_TARGET:
                lo = mid
            else:
                hi = mid
        return float(round(0.5 * (lo + hi)))

    def kidney_grey(self, st: dict[str, Any]) -> float | None:
        from scoring.oracles.us import kidney_grey, shown

        return kidney_grey(self.oracle, self.side(st), shown(st), st["image"]["shape"])

    # ---- policy ------------------------------------------------------------------------------------
    def next_op(self, st: dict[str, Any]) -> Op:
        """The next operation towards the task's goal from this state dump."""
        return getattr(self, f"_{self.task.kind}")(st)

    def _set_value(self, st):
        name, want = self.task.control, self.task.value
        have = st["controls"][name]
        if isinstance(want, str) and have == want or not isinstance(want, str) and abs(have - want) < 1e-6:
            return Op("done")
        return Op("set_param", {"name": name, "value": want})

    _set_acquisition = _set_display = _set_value

    def _measure(self, st):
        want = self.task.annotation
        saved = [s for s in st["saved"] if s["kind"] == "image" and s.get("frozen") and s["calipers"]
                 and any(a["text"] == want for a in s["annotations"])]
        if saved:
            return Op("done")
        if not st["frozen"]:
            return Op("freeze")
        if not st["calipers"]:
            from scoring.oracles.us import kidney_section, record_depth

            rec = st["frozen_image"]
            sec = kidney_section(self.oracle, self.side(st), rec["plane"], record_depth(rec))
            (x1, y1), (x2, y2) = sec["ends_mm"]
            x, y = (x1, y1) if st["caliper_pending"] is None else (x2, y2)
            return Op("caliper_point", {"x_mm": round(x, 2), "y_mm": round(y, 2)})
        if not any(a["text"] == want for a in st["annotations"]):
            return Op("add_annotation", {"text": want})
        return Op("save_image")

    def _preset_save(self, st):
        want = self.task.preset
        if any(s["acquisition"]["preset"] == want for s in st["saved"]):
            return Op("done")
        if st["frozen"]:
            return Op("freeze")  # the same key scans live again: a preset loads only while live
        if st["controls"]["preset"] != want:
            return Op("set_preset", {"name": want})
        return Op("save_clip")

    def _pose_op(self, st, target: dict[str, float]) -> Op | None:
        for name, f, tol in POSE_FIELDS:
            have, want = float(st["probe_display"][f]), float(target[f])
            d = (have - want + 180.0) % 360.0 - 180.0 if f == "rotation_deg" else have - want
            if abs(d) > tol:
                return Op("set_param", {"name": name, "value": want})
        return None

    def _long_axis(self, st):
        if st["frozen"]:
            return Op("freeze")
        return self._pose_op(st, self.long_axis_pose(st)) or Op("done")

    def _optimize(self, st):
        from scoring.oracles.us import image_quality, kidney_depths, marker_towards_head

        if st["frozen"]:
            return Op("freeze")
        if not marker_towards_head(st["plane"]):  # turned round: the same plane, the marker to the head
            turned = _value("probe_rotation_deg", float(st["probe_display"]["rotation_deg"]) + 180.0) % 360.0
            return Op("set_param", {"name": "probe_rotation_deg", "value": turned})
        kd = kidney_depths(self.oracle, self.side(st), st["plane"], st["controls"]["depth_mm"])
        depth = _value("depth_cm", (kd["bottom_mm"] + DEPTH_BELOW_KIDNEY_MM) / 10.0)
        if abs(st["controls"]["depth_mm"] / 10.0 - depth) > 0.05:
            return Op("set_param", {"name": "depth_cm", "value": depth})
        focus = _value("focus_cm", kd["centre_mm"] / 10.0)
        if abs(st["controls"]["focus_mm"] / 10.0 - focus) > 0.05:
            return Op("set_param", {"name": "focus_cm", "value": focus})
        gain_set = any(e["event"] == "param_changed" and e.get("name") == "gain" for e in st["events"])
        grey = None if not gain_set else image_quality(self.oracle, self.side(st), st)["kidney_grey"]
        if grey is None or abs(grey - GREY_TARGET) > GREY_SLACK:
            gain = self.gain_for_grey(st)  # the start's gain is off by construction: set it once at least
            if abs(gain - st["controls"]["gain"]) >= 1.0:
                return Op("set_param", {"name": "gain", "value": gain})
        return Op("done")

    def _contact_vs_gain(self, st):
        if st["frozen"]:
            return Op("freeze")
        con = st["contact"]
        if not con["coupling"]["ok"]:
            return Op("apply_gel")
        p = st["pose"]["pressure"] * 100.0
        lifting = con["fraction_in_contact"] < CONTACT_MIN_FRACTION or con["line_contact_mean"] < CONTACT_MIN_LINE_MEAN
        if lifting and p < 99.5:
            return Op("set_param", {"name": "pressure_pct",
                                    "value": GOOD_PRESSURE_PCT if p < GOOD_PRESSURE_PCT - 0.5 else min(100.0, p + PRESSURE_STEP_PCT)})
        if st["start"]["fault"] != "none":
            return Op("done")  # the contact was the cause (privileged: the start record): the gain stays
        grey = self.kidney_grey(st)
        if grey is None or grey < KIDNEY_GREY_RANGE[0]:  # contact is good and the image is still dark: gain
            gain = self.gain_for_grey(st)
            if gain > st["controls"]["gain"]:
                return Op("set_param", {"name": "gain", "value": gain})
        return Op("done")


# ---- the GUI layer: one JSON action per step ----------------------------------------------------------
BUTTONS = {"freeze": "freeze", "save_image": "save_image", "save_clip": "save_clip", "apply_gel": "apply_gel"}


class USReferenceSolver(USPlanner):
    """The planner's operations performed through the ultrasound console's widgets (privileged geometry,
    X input only).

    Widget names (console geometry export, rects [x, y, w, h], consoles/us/view.py): numeric fields
    "<parameter>_field" (click, ctrl+a, type, Enter), preset buttons "preset:<name>", choice buttons
    "<choice>:<option>", buttons "freeze", "caliper" (caliper mode, then clicks on the frozen image),
    "annotation_field" (type the text, Enter places it), "save_image", "save_clip", "apply_gel", and
    "probe_footprint" (the probe on the body map, dragged to move it). Transforms: "us_image" maps image-plane
    mm (u = x right, v = minus the depth) to the screen as x = ax u + bx, y = ay v + by; "probe_map" maps
    (u = azimuth deg, v = height mm) the same way.
    """

    IMAGE_VIEW = "us_image"
    PROBE_MAP = "probe_map"
    DRAG_MIN = {"probe_z_mm": 15.0, "probe_azimuth_deg": 8.0}  # farther than this: drag first, then type

    def __init__(self, card: TaskCard, subject: str, oracle=None) -> None:
        super().__init__(card, subject, oracle)
        self.control = None
        self._pending: list[str] = []  # later steps of one operation, as ready JSON actions

    def _type_value(self, rect: list[int], value: float | str) -> str:
        """Click the field, select all, type, Enter (one action per step)."""
        self._pending = replace_text(str(value))
        return click(rect)

    def _image_point(self, tf: dict[str, Any], x_mm: float, y_mm: float) -> str:
        t = tf[self.IMAGE_VIEW]
        return json.dumps({"action": "click", "x": int(round(t["ax"] * x_mm + t["bx"])),
                           "y": int(round(t["ay"] * (-y_mm) + t["by"]))})

    def _drag_probe(self, st, geo, tf, name: str, value: float) -> str | None:
        """Drag the footprint on the body map towards the target when it is far (typing then refines)."""
        if name not in self.DRAG_MIN or "probe_footprint" not in geo or self.PROBE_MAP not in tf:
            return None
        f = "z_mm" if name == "probe_z_mm" else "azimuth_deg"
        if abs(float(st["probe_display"][f]) - value) <= self.DRAG_MIN[name]:
            return None
        target = self.long_axis_pose(st) if self.task.kind == "long_axis" else {f: value}
        az = target.get("azimuth_deg", st["probe_display"]["azimuth_deg"])
        z = target.get("z_mm", st["probe_display"]["z_mm"])
        t = tf[self.PROBE_MAP]
        x, y = centre(geo["probe_footprint"])
        return json.dumps({"action": "drag", "x": x, "y": y, "to_x": int(round(t["ax"] * az + t["bx"])),
                           "to_y": int(round(t["ay"] * z + t["by"]))})

    def next_action(self, obs) -> str:
        """One JSON action for this step."""
        if self._pending:
            return self._pending.pop(0)
        st = self.control.state()
        g = self.control.geometry()
        geo, tf = g["geometry"], g.get("transforms", {})
        op = self.next_op(st)
        a = op.args
        if op.name == "done":
            return json.dumps({"action": "done"})
        if op.name == "wait":
            return wait(a["seconds"])
        if op.name == "set_param":
            name, value = a["name"], a["value"]
            drag = self._drag_probe(st, geo, tf, name, float(value))
            if drag is not None:
                return drag
            text = f"{value:.{DECIMALS.get(name, 1)}f}" if isinstance(value, (int, float)) else str(value)
            return self._type_value(geo[f"{name}_field"], text)
        if op.name == "set_preset":
            return click(geo[f"preset:{a['name']}"])
        if op.name == "caliper_point":
            if st["caliper_pending"] is None and not st["calipers"]:
                # caliper mode first (the button arms the image); then the first end on the image
                self._pending = [self._image_point(tf, a["x_mm"], a["y_mm"])]
                return click(geo["caliper"])
            return self._image_point(tf, a["x_mm"], a["y_mm"])
        if op.name == "add_annotation":
            return self._type_value(geo["annotation_field"], a["text"])
        if op.name in BUTTONS:
            return click(geo[BUTTONS[op.name]])
        raise ValueError(f"the ultrasound reference solver has no GUI action for operation {op.name!r}")
