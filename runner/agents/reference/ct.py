"""Reference solver for the CT tasks: plans from the hidden anatomy, acts like any agent.

Each step it reads the console state and widget geometry (privileged) and returns one JSON
action for the normal parse -> XTEST path. Targets come from the subject oracle plus margins;
isocentre targets reuse the scorer's definitions so the two cannot drift apart.
"""
from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from runner.taskcard import TaskCard

ORGANS = {"lungs": ("lungs",), "liver": ("liver",), "kidneys": ("kidney_left", "kidney_right"),
          "heart": ("heart",), "kub": ("kidney_left", "kidney_right", "bladder")}
# Per task: protocol, anatomy to cover, margins (mm) above / below, isocentre reference, extras.
TASK_PLANS: dict[str, dict[str, Any]] = {
    "ct_ui_smoke_routine": {"protocol": "chest_routine", "organ": "lungs", "margin_top": 10.0, "margin_bottom": 10.0},
    "ct_lung_coverage_isocenter": {"protocol": "chest_routine", "organ": "lungs", "margin_top": 10.0,
                                   "margin_bottom": 10.0, "iso": True},
    "ct_liver_coverage_isocenter": {"protocol": "abdomen_liver", "organ": "liver", "margin_top": 15.0,
                                    "margin_bottom": 15.0, "iso": True},
    "ct_renal_bilateral_coverage": {"protocol": "renal", "organ": "kidneys", "margin_top": 15.0,
                                    "margin_bottom": 15.0},
    "ccta_heart_coverage_isocenter": {"protocol": "ccta", "organ": "heart", "margin_top": 10.0,
                                      "margin_bottom": 10.0, "iso": True, "bolus": True},
    "ct_kub_low_dose_constraint": {"protocol": "kub_low_dose", "organ": "kub", "margin_top": 15.0,
                                   "margin_bottom": 10.0, "dose_limit": True},
    "ct_undercoverage_recovery": {"protocol": "chest_routine", "organ": "lungs", "margin_top": 10.0,
                                  "margin_bottom": 10.0, "recovery": True},
    "ct_renal_undercoverage_recovery": {"protocol": "renal", "organ": "kidneys", "margin_top": 10.0,
                                        "margin_bottom": 10.0, "recovery": True},
}
POSITION_TOLERANCE_MM = 2.5
HEIGHT_TOLERANCE_MM = 2.0
DOSE_TARGET_FRACTION = 0.88  # of the CTDIvol limit: under it with room, not far below
RECOVERY_OVERLAP_MM = 5.0


def _centre(rect: list[int]) -> tuple[int, int]:
    x, y, w, h = rect
    return x + w // 2, y + h // 2


def click(rect: list[int]) -> str:
    x, y = _centre(rect)
    return json.dumps({"action": "click", "x": x, "y": y})


def wait(seconds: float) -> str:
    return json.dumps({"action": "wait", "seconds": round(min(30.0, max(0.5, seconds)), 2)})


class CTReferenceSolver:
    def __init__(self, card: TaskCard, subject: str) -> None:
        from scoring.subject_oracle import load_oracle

        self.card = card
        self.plan = TASK_PLANS[card.id]
        self.organs = ORGANS[self.plan["organ"]]
        self.oracle = load_oracle(subject)
        self.control = None
        self._typing: list[str] = []
        self._reviewed_prior = False
        self._selected_prior = False

    # ---- targets ----------------------------------------------------------------------
    def _to_table(self, state: dict[str, Any], z: float) -> float:
        f = state["frame"]
        return z - f["laser_z_subject_mm"] + f["patient_shift_mm"]

    def organ_extent(self) -> tuple[float, float]:
        ext = [self.oracle.organ_z_extent(o) for o in self.organs]
        return min(e[0] for e in ext), max(e[1] for e in ext)

    def target_range(self, state: dict[str, Any]) -> tuple[float, float]:
        """(start, end) in table mm covering the organ(s) with the plan's margins (or the missing part)."""
        zmin, zmax = self.organ_extent()
        start = round(self._to_table(state, zmax + self.plan["margin_top"]), 1)
        end = round(self._to_table(state, zmin - self.plan["margin_bottom"]), 1)
        if self.plan.get("recovery"):
            prior = next(s for s in state["series"] if s.get("prior"))
            lo_sub = prior["subject_z_bottom"]
            hi_sub = prior["subject_z_top"]
            if zmax - hi_sub >= lo_sub - zmin:  # the top was clipped: scan from above the organ to the prior top
                end = round(prior["start_mm"] - RECOVERY_OVERLAP_MM, 1)
            else:
                start = round(prior["end_mm"] + RECOVERY_OVERLAP_MM, 1)
        return start, end

    def target_table_height(self) -> float | None:
        if not self.plan.get("iso"):
            return None
        from consoles.ct.model import ISO_HEIGHT_MM
        from scoring.oracles.ct import COVERAGE_TASKS, isocentre_target_y

        y = isocentre_target_y(self.oracle, COVERAGE_TASKS[self.card.id])
        return round(y + ISO_HEIGHT_MM, 1)

    def target_mas(self, state: dict[str, Any]) -> float | None:
        limit = state["dose"].get("ctdi_limit_mgy")
        if not self.plan.get("dose_limit") or limit is None:
            return None
        from rendering.ct_physics import ctdi_vol

        p = state["params"]
        per_mas = ctdi_vol(p["kv"], 1.0, p["pitch"])
        return float(math.floor(DOSE_TARGET_FRACTION * limit / per_mas))

    def monitor_target(self, state: dict[str, Any]) -> tuple[float, float, float]:
        """(table z of the monitoring slice, ROI x, ROI y): the descending aorta's widest section
        in the upper heart range, and its centroid there."""
        rt = self.oracle.runtime
        mask = self.oracle.organ_mask("aorta_descending")
        hz0, hz1 = self.oracle.organ_z_extent("heart")
        z = rt.world_z()
        ks = [k for k in np.nonzero((z >= hz1 - 45) & (z <= hz1 - 10))[0] if mask[k].any()]
        k = max(ks, key=lambda k: (int(mask[k].sum()), -k))
        j, i = np.nonzero(mask[k])
        x = rt.origin_mm[0] + rt.spacing_mm[0] * i.mean()
        y = rt.origin_mm[1] + rt.spacing_mm[1] * j.mean()
        return round(self._to_table(state, float(z[k])), 1), float(x), float(y)

    # ---- policy -----------------------------------------------------------------------
    def _type_value(self, field_rect: list[int], value: float) -> str:
        """Queue: click field, select all, type, Enter (one action per step)."""
        x, y = _centre(field_rect)
        self._typing = [json.dumps({"action": "key", "key": "ctrl+a"}),
                        json.dumps({"action": "type", "text": f"{value:.1f}"}),
                        json.dumps({"action": "key", "key": "Enter"})]
        return json.dumps({"action": "click", "x": x, "y": y})

    def _plan_range(self, st, geo, tf, obs) -> str | None:
        start, end = self.target_range(st)
        plan = st["plan"]
        for edge, want, field in (("start", start, "start_field"), ("end", end, "end_field")):
            have = plan[f"{edge}_mm"]
            if abs(have - want) > POSITION_TOLERANCE_MM:
                handle = geo.get(f"scout_ap.range_{edge}_edge")
                t = tf.get("scout_ap")
                on_screen = handle is not None and 0 <= _centre(handle)[1] < obs.height
                if on_screen and t and abs(have - want) > 15:  # an edge beyond the screen is typed instead
                    x, y = _centre(handle)
                    ty = int(round(t["ay"] * want + t["by"]))
                    ty = min(max(ty, 0), obs.height - 1)
                    return json.dumps({"action": "drag", "x": x, "y": y, "to_x": x, "to_y": ty})
                return self._type_value(geo[field], want)
        h = self.target_table_height()
        if h is not None and abs(plan["table_height_mm"] - h) > HEIGHT_TOLERANCE_MM:
            return self._type_value(geo["table_height_field"], h)
        mas = self.target_mas(st)
        if mas is not None and st["dose"]["limit_exceeded"] or (
                mas is not None and abs(st["params"]["mas"] - mas) > 1.0):
            return self._type_value(geo["mas_field"], mas)
        return None

    def next_action(self, obs) -> str:
        if self._typing:
            return self._typing.pop(0)
        st = self.control.state()
        g = self.control.geometry()
        geo, tf = g["geometry"], g["transforms"]
        want_protocol = self.plan["protocol"]
        page = st["ui"]["page"]
        if st["protocol"] != want_protocol:
            if st["selected_protocol"] != want_protocol:
                return click(geo[f"protocol_item:{want_protocol}"])
            return click(geo["load_protocol"])
        if st["scout"]["status"] == "none":
            return click(geo["acquire_scout"])
        if st["scout"]["status"] == "acquiring":
            return wait(st["scout_remaining_s"] + 0.1)
        if st["scan"]["status"] != "idle":
            return wait(st["scan"]["remaining_s"] + 0.1)
        if st["bolus"]["status"] in ("monitoring", "triggered"):
            return wait(3.0)
        if self.plan.get("recovery") and not self._reviewed_prior:
            if page != "review":
                return click(geo["tab_review"])
            if not self._selected_prior:
                self._selected_prior = True
                return click(geo["series_item:0"])
            self._reviewed_prior = True
            return click(geo["open_recon"])
        n_series = sum(1 for s in st["series"] if s["protocol"] == want_protocol and not s.get("prior"))
        if n_series == 0:
            bolus = st["bolus"]
            if self.plan.get("bolus") and bolus["status"] in ("ready",) and st["plan"]["confirmed"]:
                # planning is done and confirmed: place the ROI, then inject
                if page != "bolus":
                    return click(geo["tab_bolus"])
                if bolus["roi"] is None:
                    _, x, y = self.monitor_target(st)
                    t = tf["monitor_view"]
                    return json.dumps({"action": "click", "x": int(round(t["ax"] * x + t["bx"])),
                                       "y": int(round(t["ay"] * (-y) + t["by"]))})
                return click(geo["start_bolus"])
            if page != "planning" and not (self.plan.get("bolus") and st["plan"]["confirmed"]):
                return click(geo["tab_plan"])
            if not st["plan"]["confirmed"]:
                act = self._plan_range(st, geo, tf, obs)
                if act is not None:
                    return act
                return click(geo["confirm_plan"])
            if self.plan.get("bolus"):
                if page != "bolus":
                    return click(geo["tab_bolus"])
                mz, _, _ = self.monitor_target(st)
                if bolus["monitor_z_mm"] is None or abs(bolus["monitor_z_mm"] - mz) > 1.0:
                    return self._type_value(geo["monitor_z_field"], mz)
                return click(geo["monitor_reference"])
            return click(geo["scan"])
        if st["recon"]["open_series"] is None or any(
                s["uid"] == st["recon"]["open_series"] and s.get("prior") for s in st["series"]):
            if "open_recon" not in geo or page != "review":
                return click(geo["tab_review"])
            return click(geo["open_recon"])
        return json.dumps({"action": "done"})
