"""Reference solver for the CT tasks: plans from the hidden anatomy, acts like any agent.

Each step it reads the console state and widget geometry (privileged) and returns one JSON
action for the normal parse -> XTEST path. Targets come from the subject oracle plus margins.
"""
from __future__ import annotations

import json
from typing import Any

from runner.taskcard import TaskCard

# Per task: protocol to load and the anatomy (organ, margin above, margin below in mm) to cover.
TASK_PLANS: dict[str, dict[str, Any]] = {
    "ct_ui_smoke_routine": {"protocol": "chest_routine", "organ": "lungs", "margin_top": 10.0,
                            "margin_bottom": 10.0},
}
POSITION_TOLERANCE_MM = 2.5


def _centre(rect: list[int]) -> tuple[int, int]:
    x, y, w, h = rect
    return x + w // 2, y + h // 2


def click(rect: list[int]) -> str:
    x, y = _centre(rect)
    return json.dumps({"action": "click", "x": x, "y": y})


def wait(seconds: float) -> str:
    return json.dumps({"action": "wait", "seconds": round(max(0.5, seconds), 2)})


class CTReferenceSolver:
    def __init__(self, card: TaskCard, subject: str) -> None:
        from scoring.subject_oracle import load_oracle

        self.card = card
        self.plan = TASK_PLANS[card.id]
        self.oracle = load_oracle(subject)
        self.control = None
        self._typing: list[str] = []
        self._opened = False

    # ---- targets ----------------------------------------------------------------------
    def target_range(self, state: dict[str, Any]) -> tuple[float, float]:
        """(start, end) in table mm covering the organ with the plan's margins."""
        zmin, zmax = self.oracle.organ_z_extent(self.plan["organ"])
        f = state["frame"]
        to_table = lambda z: z - f["laser_z_subject_mm"] + f["patient_shift_mm"]  # noqa: E731
        return (round(to_table(zmax + self.plan["margin_top"]), 1),
                round(to_table(zmin - self.plan["margin_bottom"]), 1))

    # ---- policy -----------------------------------------------------------------------
    def _type_value(self, field_rect: list[int], value: float) -> str:
        """Queue: click field, select all, type, Enter (one action per step)."""
        x, y = _centre(field_rect)
        self._typing = [json.dumps({"action": "key", "key": "ctrl+a"}),
                        json.dumps({"action": "type", "text": f"{value:.1f}"}),
                        json.dumps({"action": "key", "key": "Enter"})]
        return json.dumps({"action": "click", "x": x, "y": y})

    def next_action(self, obs) -> str:
        if self._typing:
            return self._typing.pop(0)
        st = self.control.state()
        g = self.control.geometry()
        geo, tf = g["geometry"], g["transforms"]
        want_protocol = self.plan["protocol"]
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
        n_series = sum(1 for s in st["series"] if s["protocol"] == want_protocol)
        if n_series == 0:
            if st["ui"]["page"] != "planning":
                return click(geo["tab_plan"])
            start, end = self.target_range(st)
            plan = st["plan"]
            for edge, want, field in (("start", start, "start_field"), ("end", end, "end_field")):
                have = plan[f"{edge}_mm"]
                if abs(have - want) > POSITION_TOLERANCE_MM:
                    handle = geo.get(f"scout_ap.range_{edge}_edge")
                    t = tf.get("scout_ap")
                    if handle and t and abs(have - want) > 15:
                        x, y = _centre(handle)
                        ty = int(round(t["ay"] * want + t["by"]))
                        ty = min(max(ty, 0), obs.height - 1)
                        return json.dumps({"action": "drag", "x": x, "y": y, "to_x": x, "to_y": ty})
                    return self._type_value(geo[field], want)
            if not plan["confirmed"]:
                return click(geo["confirm_plan"])
            return click(geo["scan"])
        if st["recon"]["open_series"] is None:
            if "open_recon" not in geo:
                return click(geo["tab_review"])
            return click(geo["open_recon"])
        return json.dumps({"action": "done"})
