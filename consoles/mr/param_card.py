"""The MR parameter card: declared Parameters (PARAMETERS, grouped by CARD) and choices (CHOICES) of the open
row, clamped and enabled by Rules, and the MRModel mixin that reads and sets them (no Qt). The scan time and
conflicts follow from them (row_params).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from consoles.common.model_base import Rule
from consoles.common.numeric import judge_entry
from consoles.common.params import Parameter
from consoles.mr import mapping
from consoles.mr.protocols import TRIGGERS
from consoles.mr.row_params import AXIS_INDEX, SECONDARY, SHIM_MODES

if TYPE_CHECKING:
    from consoles.mr.queue import QueueRow

__all__ = ["PARAMETERS", "PARAM", "CHOICES", "CARD", "ParameterCard", "ROW_OPEN", "ROW_EDITABLE", "NOT_LOCALIZER",
           "HAS_INVERSION", "TRIGGERABLE", "TRIGGERED", "READ_ONLY", "IS_MOLLI", "GEOMETRY", "PHYSIO", "SHIM",
           "SHIM_CENTRE", "SHIM_SIZE", "SHIM_FIELDS", "SHIM_SIZE_MM"]

# ---- rules -------------------------------------------------------------------------------------------
ROW_OPEN = Rule((lambda m: m.open_row is not None, "Open a row of the queue first."))
ROW_EDITABLE = ROW_OPEN & Rule(
    (lambda m: m.open_row.status != "running", "This row is running: stop it to change its parameters."),
    (lambda m: m.open_row.status != "done", "This row has been acquired: repeat it to change its parameters."),
    (lambda m: m.open_row.proto.acquirable, "This protocol is a placeholder: it cannot be acquired yet."),
)
NOT_LOCALIZER = Rule((lambda m: not m.open_row.proto.is_localizer,
                      "The localizer's three stacks are fixed about the isocentre."))
HAS_INVERSION = Rule((lambda m: m.open_row.params.ti_ms is not None, "This sequence has no inversion pulse."))
TRIGGERABLE = Rule((lambda m: m.open_row.proto.triggerable, "This sequence is not triggered."))
TRIGGERED = Rule((lambda m: m.open_row.params.trigger != "none", "Set the trigger to ECG or pulse first."))
READ_ONLY = Rule((lambda m: False, "The heart rate is measured from the ECG."))
IS_MOLLI = Rule((lambda m: m.open_row.params.scheme in mapping.mm.MOLLI_SCHEMES,
                 "Only a MOLLI T1 map has an inversion scheme."))

GEOMETRY = ROW_EDITABLE & NOT_LOCALIZER
PHYSIO = ROW_EDITABLE & TRIGGERABLE & TRIGGERED
SHIM = ROW_EDITABLE & Rule((lambda m: not m.open_row.proto.is_localizer,
                            "The localizer is shimmed with the scanner's tune-up volume: it has no shim box."))

# name -> (RowParams attribute, index into it for tuples or None)
_ATTR: dict[str, tuple[str, int | None]] = {
    "pos_lr_mm": ("centre_mm", 0), "pos_ap_mm": ("centre_mm", 1), "pos_fh_mm": ("centre_mm", 2),
}
# The Position fields are in the scanner frame, as real consoles show them: mm of the slice group's centre
# from the isocentre, + = left, posterior, head (the subject frame's axes, so only the origin differs). A typed
# position therefore lands on other anatomy when the patient lies elsewhere (seeded landmark and isocentre
# offsets), as on a scanner; RowParams.centre_mm stays in subject mm. Card params name them the same way.
_SCANNER_FRAME = ("pos_lr_mm", "pos_ap_mm", "pos_fh_mm")
_INT_PARAMS = ("n_slices", "matrix", "averages")
# The shim box (adjust volume) on the card (issue 34): its centre in the scanner frame, as the Position fields
# (mm from the isocentre, + = L, P, H), and its size along the slice group's read, phase and slice axes, the axes
# the box is drawn on. Typed values go through set_shim_centre / set_shim_size, like the box's grips.
SHIM_CENTRE = ("shim_lr_mm", "shim_ap_mm", "shim_fh_mm")
SHIM_SIZE = ("shim_read_mm", "shim_phase_mm", "shim_slice_mm")
SHIM_FIELDS = SHIM_CENTRE + SHIM_SIZE
SHIM_SIZE_MM = (10.0, 500.0)  # the adjust volume's smallest and largest edge


def _p(name: str, label: str, unit: str, lo: float, hi: float, decimals: int, step: float, rule: Rule) -> Parameter:
    return Parameter(name, label, unit, lo, hi, decimals, step, rule, get=lambda m, n=name: m.open_value(n),
                     set=lambda m, v, n=name: m.set_param(n, v))


PARAMETERS: tuple[Parameter, ...] = (
    # Routine
    _p("n_slices", "Slices", "", 1, 64, 0, 1, ROW_EDITABLE & NOT_LOCALIZER),
    _p("thickness_mm", "Slice thickness", "mm", 1.0, 20.0, 1, 0.5, ROW_EDITABLE),
    _p("gap_mm", "Gap", "mm", 0.0, 30.0, 1, 0.5, ROW_EDITABLE & NOT_LOCALIZER),
    _p("fov_read_mm", "FOV read", "mm", 100, 500, 0, 10, ROW_EDITABLE),
    _p("fov_phase_mm", "FOV phase", "mm", 50, 500, 0, 10, ROW_EDITABLE),
    _p("matrix", "Matrix", "", 64, 512, 0, 16, ROW_EDITABLE),
    _p("averages", "Averages", "", 1, 8, 0, 1, ROW_EDITABLE),
    # Contrast
    _p("tr_ms", "TR", "ms", 2.0, 10000.0, 1, 0.1, ROW_EDITABLE),
    _p("te_ms", "TE", "ms", 1.0, 300.0, 1, 0.1, ROW_EDITABLE),
    _p("ti_ms", "TI", "ms", 10, 3000, 0, 10, ROW_EDITABLE & HAS_INVERSION),
    _p("flip_deg", "Flip angle", "deg", 1, 180, 0, 5, ROW_EDITABLE),
    # Physio
    _p("trigger_delay_ms", "Trigger delay", "ms", 0, 2000, 0, 10, PHYSIO),
    _p("acq_window_ms", "Acquisition window", "ms", 20, 2000, 0, 10, PHYSIO),
    Parameter("heart_rate_bpm", "Heart rate", "bpm", 20, 250, 0, 1, READ_ONLY,
              get=lambda m: m.shown_heart_rate() or float("nan")),
    # Geometry
    _p("pos_lr_mm", "Position L/R", "mm", -500, 500, 1, 1, GEOMETRY),
    _p("pos_ap_mm", "Position A/P", "mm", -500, 500, 1, 1, GEOMETRY),
    _p("pos_fh_mm", "Position F/H", "mm", -1000, 1000, 1, 1, GEOMETRY),
    _p("tilt_a_deg", "Tilt 1", "deg", -90, 90, 1, 1, GEOMETRY),
    _p("tilt_b_deg", "Tilt 2", "deg", -90, 90, 1, 1, GEOMETRY),
    _p("inplane_deg", "In-plane rotation", "deg", -180, 180, 1, 1, GEOMETRY),
    # Geometry: the shim box (the centre's ranges are the Position fields')
    _p("shim_lr_mm", "Shim centre L/R", "mm", -500, 500, 1, 1, SHIM),
    _p("shim_ap_mm", "Shim centre A/P", "mm", -500, 500, 1, 1, SHIM),
    _p("shim_fh_mm", "Shim centre F/H", "mm", -1000, 1000, 1, 1, SHIM),
    _p("shim_read_mm", "Shim size read", "mm", *SHIM_SIZE_MM, 1, 1, SHIM),
    _p("shim_phase_mm", "Shim size phase", "mm", *SHIM_SIZE_MM, 1, 1, SHIM),
    _p("shim_slice_mm", "Shim size slice", "mm", *SHIM_SIZE_MM, 1, 1, SHIM),
)
PARAM = {p.name: p for p in PARAMETERS}

# Settings chosen from a list: name -> (options, enable rule).
CHOICES: dict[str, tuple[tuple[str, ...], Rule]] = {
    "trigger": (TRIGGERS, ROW_EDITABLE & TRIGGERABLE),
    "main": (("T", "C", "S"), GEOMETRY),
    "shim_mode": (SHIM_MODES, ROW_EDITABLE),
    "scheme": (tuple(mapping.mm.MOLLI_SCHEMES), ROW_OPEN & IS_MOLLI & ROW_EDITABLE),
}

# The parameter card's tabs and their fields, in screen order.
CARD: dict[str, tuple[str, ...]] = {
    "Routine": ("n_slices", "thickness_mm", "gap_mm", "fov_read_mm", "fov_phase_mm", "matrix", "averages"),
    "Contrast": ("tr_ms", "te_ms", "ti_ms", "flip_deg", "scheme"),
    "Physio": ("trigger", "trigger_delay_ms", "acq_window_ms", "heart_rate_bpm"),
    "Geometry": ("pos_lr_mm", "pos_ap_mm", "pos_fh_mm", "main", "tilt_a_deg", "tilt_b_deg", "inplane_deg",
                 "shim_mode") + SHIM_FIELDS,
}


MAIN_WORDS = {"T": "Tra", "C": "Cor", "S": "Sag"}


def tilts_in_base(normal: Any, main: str) -> tuple[float, float]:
    """(tilt 1, tilt 2) of a plane's normal counted from main orientation `main` (row_params' convention:
    n_main = cos a cos b, n_second = sin a cos b, n_third = sin b, with the sign of n that makes n_main >= 0),
    both in -90..90: any plane can be written on any base."""
    n = np.asarray(normal, float)
    n = n / np.linalg.norm(n)
    sec, third = SECONDARY[main]
    if n[AXIS_INDEX[main]] < 0 or (abs(n[AXIS_INDEX[main]]) < 1e-12 and n[AXIS_INDEX[sec]] < 0):
        n = -n
    b = math.degrees(math.asin(max(-1.0, min(1.0, float(n[AXIS_INDEX[third]])))))
    a = math.degrees(math.atan2(float(n[AXIS_INDEX[sec]]), float(n[AXIS_INDEX[main]])))
    return round(a, 4) + 0.0, round(b, 4) + 0.0


def keep_plane(p: Any, pose: Any) -> None:
    """Row parameters `p` (main orientation already the new one) made to describe `pose`'s plane again: tilts
    converted to the new base, the in-plane rotation that keeps the FOV's read axis where it lies, centre kept."""
    p.tilt_a_deg, p.tilt_b_deg = tilts_in_base(pose.normal, p.main)
    p.inplane_deg = 0.0
    canonical = p.pose()
    ang = math.degrees(math.atan2(float(np.dot(pose.u, canonical.v)), float(np.dot(pose.u, canonical.u))))
    p.inplane_deg = round(ang, 4) + 0.0


class ParameterCard:
    """The open row's values as the card shows them, and their setters (logged, refused by their rules)."""

    def open_value(self, name: str) -> float:
        """Value of parameter `name` of the open row (NaN with no row open or no such value)."""
        row = self.open_row
        if row is None:
            return float("nan")
        if name in SHIM_FIELDS:
            return self.shim_value(name)
        attr, i = _ATTR.get(name, (name, None))
        v = getattr(row.params, attr)
        v = v[i] if i is not None else v
        if v is not None and name in _SCANNER_FRAME:
            v = round(float(v) - self.isocentre_mm[i], 3)
        return float("nan") if v is None else float(v)

    def _apply_param(self, row: QueueRow, name: str, value: Any) -> Any:
        """Clamp and store one value on a row (no rule check: initial state and set_param share it)."""
        if name in CHOICES:
            options = CHOICES[name][0]
            self._require(value in options, f"{name} must be one of {', '.join(options)}.")
            setattr(row.params, name, value)
            return value
        self._require(name in PARAM and PARAM[name].set is not None, f"unknown parameter {name}")
        self._require(value is not None and math.isfinite(float(value)), "Enter a number.")
        v: Any = PARAM[name].clamp(float(value))
        if name in _INT_PARAMS:
            v = int(v)
        attr, i = _ATTR.get(name, (name, None))
        if i is None:
            setattr(row.params, attr, v)
        else:
            t = list(getattr(row.params, attr))
            t[i] = round(v + self.isocentre_mm[i], 3) + 0.0 if name in _SCANNER_FRAME else v
            setattr(row.params, attr, tuple(t))
        return v

    def set_param(self, name: str, value: Any) -> Any:
        """Set a numeric parameter or a choice of the open row (clamped); returns the stored value."""
        if name in SHIM_FIELDS:
            return self.set_shim_field(name, value)
        rule = CHOICES[name][1] if name in CHOICES else self.parameter(name).enabled_when
        self._require_rule(rule)
        row = self.open_row
        assert row is not None
        kept = row.params.pose() if name == "main" and value != row.params.main else None
        v = self._apply_param(row, name, value)
        self._log("param_changed", row=row.uid, name=name, value=v)
        self.message = self._param_message(row, name, v)
        if kept is not None:  # issue 34: the plane stays where it is, its angles now counted from the new base
            keep_plane(row.params, kept)
            self._log("geometry_changed", row=row.uid, centre_mm=list(row.params.centre_mm),
                      orientation=row.params.orientation_text(), inplane_deg=row.params.inplane_deg)
            p = row.params
            self.message = (f"Main orientation {MAIN_WORDS[p.main]}: the plane is kept, its angles now read Tilt 1 "
                            f"{p.tilt_a_deg:.1f}, Tilt 2 {p.tilt_b_deg:.1f}, in-plane {p.inplane_deg:.1f} deg.")
        self._changed("params")
        return v

    def set_pose(self, pose: Any) -> None:
        """Graphical planning: centre, orientation and in-plane rotation of the open row from a PlanePose."""
        self._require_rule(GEOMETRY)
        row = self.open_row
        assert row is not None
        row.params.set_pose(pose)
        self._log("geometry_changed", row=row.uid, centre_mm=list(row.params.centre_mm),
                  orientation=row.params.orientation_text(), inplane_deg=row.params.inplane_deg)
        self.message = f"Row {self.index_of(row.uid)}: slice group planned at {row.params.orientation_text()}."
        self._changed("params")

    def set_shim_size(self, size_mm: tuple[float, float, float] | None) -> None:
        """Adjust volume size (read, phase, slice mm) of the open row; None follows the slab."""
        self._require_rule(ROW_EDITABLE)
        row = self.open_row
        assert row is not None
        lo, hi = SHIM_SIZE_MM
        row.params.shim_size_mm = None if size_mm is None else tuple(round(max(lo, min(hi, float(s))), 1)
                                                                      for s in size_mm)
        self._log("shim_box_changed", row=row.uid, size_mm=row.params.shim_size_mm)
        self._changed("params")

    def set_shim_centre(self, centre_mm: Any | None) -> None:
        """Adjust volume centre (subject mm) of the open row; None follows the slice group."""
        self._require_rule(ROW_EDITABLE)
        row = self.open_row
        assert row is not None
        if centre_mm is not None:
            c = np.asarray(centre_mm, float).reshape(3)
            self._require(bool(np.all(np.isfinite(c))), "Enter a number.")
            centre_mm = tuple(round(max(-1000.0, min(1000.0, float(x))), 3) + 0.0 for x in c)
        row.params.shim_centre_mm = centre_mm
        self._log("shim_box_moved", row=row.uid, centre_mm=None if centre_mm is None else list(centre_mm))
        self._changed("params")

    def shim_value(self, name: str) -> float:
        """One shim box field of the open row as the card shows it: a centre coordinate in the scanner frame
        (mm from the isocentre) or a size along the group's axes (NaN with no row open)."""
        row = self.open_row
        if row is None:
            return float("nan")
        box = row.params.shim_box()
        if name in SHIM_CENTRE:
            k = SHIM_CENTRE.index(name)
            return round(float(box["centre"][k]) - float(self.isocentre_mm[k]), 3) + 0.0
        self._require(name in SHIM_SIZE, f"unknown shim box field {name}")
        return float(box["size_mm"][SHIM_SIZE.index(name)])

    def set_shim_field(self, name: str, value: Any) -> float:
        """Type one shim box field (centre: scanner-frame mm; size: mm along read, phase or slice): refused
        outside its range like every field, the box's other values kept as they are now (a box that followed
        the slab keeps the slab's other values). Returns the value set."""
        self._require(name in SHIM_FIELDS, f"unknown shim box field {name}")
        p = PARAM[name]
        self._require_rule(p.enabled_when)
        self._require(value is not None and math.isfinite(float(value)), "Enter a number.")
        verdict = judge_entry(p.label, float(value), p.lo, p.hi, p.decimals, p.unit)  # a field's own refusal
        self._require(verdict.value is not None, str(verdict.message))
        v = float(verdict.value)
        row = self.open_row
        assert row is not None
        box = row.params.shim_box()
        if name in SHIM_CENTRE:
            k = SHIM_CENTRE.index(name)
            centre = [float(c) for c in box["centre"]]
            centre[k] = v + float(self.isocentre_mm[k])
            self.set_shim_centre(centre)
        else:
            size = [float(s) for s in box["size_mm"]]
            size[SHIM_SIZE.index(name)] = v
            self.set_shim_size(tuple(size))
        self.message = f"{p.label} {v:.1f} mm."
        return v

    def card(self) -> dict[str, list[dict[str, Any]]]:
        """The open row's card as the view shows it: per tab, each field's value, unit and why it is greyed."""
        out: dict[str, list[dict[str, Any]]] = {}
        for tab, names in CARD.items():
            fields = []
            for n in names:
                if n in CHOICES:
                    options, rule = CHOICES[n]
                    row = self.open_row
                    fields.append({"name": n, "options": list(options), "value": getattr(row.params, n) if row else None,
                                   "enabled": rule(self), "reason": rule.reason(self)})
                else:
                    p = PARAM[n]
                    v = p.value(self)
                    fields.append({"name": n, "label": p.label, "unit": p.unit,
                                   "value": None if math.isnan(v) else round(v, p.decimals),
                                   "enabled": p.enabled(self), "reason": p.refusal(self)})
            out[tab] = fields
        return out
