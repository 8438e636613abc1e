"""Reference policy of the MR T1/T2 mapping tasks and the stopped-row recovery (mixed into MRPlanner).

Per mapping protocol (T1 MOLLI, then T2-prep): plan the row on the mid-ventricular short axis (the LV long
axis from the subject oracle, as the planning tasks do, by drags on the shown images), set the parameters a
radiographer sets for this heart rate (ECG trigger, consoles.mr.mapping.recommended_timing, a 6-8 mm slice,
a MOLLI scheme), acquire, show the map and measure an ROI in the septal myocardium (inspection), and when the map
shows a cause (the privileged policy reads series[].mapping.causes; it acts only through console
operations) repeat the row, fix the cause (shim box onto the heart, timing, slice) and acquire again.
L6: wait while the row runs, and when the fault stopped it, open it and press Go.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from runner.agents.reference.common import Op

MAP_THICKNESS_MM = 8.0  # what the reference sets when the slice thickness is outside 6-8 mm
ROI_RADIUS_MM = 22.0  # fallback inspection ROI when the slice shows no septum: a circle over the LV
SEPTAL_ROI_MAX_MM = 6.0  # the septal ROI's radius at most (a reader's ROI in the mid septum: 4-6 mm)
SEPTAL_ROI_MIN_MM = 2.5
SHIM_CAUSES = ("shim_off_heart", "banding")


class MappingPolicy:
    """`_<kind>` methods of the mapping kinds; uses PlanningPolicy's plane_op / translate_op / shim helpers."""

    # ---- targets --------------------------------------------------------------------------------------
    def mid_sax_target(self) -> tuple[np.ndarray, np.ndarray]:
        """(normal, centre) of the mid-ventricular short-axis slice: the LV long axis, half way."""
        base, apex = (np.asarray(x, float) for x in self.oracle.lv_long_axis)
        axis = (apex - base) / np.linalg.norm(apex - base)
        return axis, (base + apex) / 2.0

    def _geometry_clean(self, s: dict[str, Any]) -> bool:
        from scoring.oracles.mr_mapping import geometry_measures, geometry_ok

        return all(geometry_ok(geometry_measures(s, self.oracle)).values())

    @staticmethod
    def _last_map(st: dict[str, Any], protocol: str) -> dict[str, Any] | None:
        from scoring.oracles.mr_planning import acquired_series

        return acquired_series(st, protocol)

    @staticmethod
    def _inspected(st: dict[str, Any], series_uid: int) -> bool:
        n0 = st["start"]["n_events"]
        return any(e["event"] == "roi_measured" and e.get("series") == series_uid for e in st["events"][n0:])

    def _inspect_op(self, st: dict[str, Any], s: dict[str, Any]) -> Op:
        """Show the map in the last viewport, then draw an ROI over the LV at the slice."""
        vps = [v for v in st["layout"]["viewports"] if v["visible"]]
        vp = vps[-1]
        if vp.get("series") != s["uid"] or vp.get("image") != 1:
            return Op("load_entry", {"viewport": vp["index"] - 1, "key": f"{s['uid']}.1"})
        septal = self._septal_roi(st, s)
        if septal is not None:
            c, r = septal
        else:
            im = s["images"][0]
            _, centre = self.mid_sax_target()
            d = centre - np.asarray(im["centre_mm"], float)
            c = (round(float(d @ np.asarray(im["u"], float)), 2), round(float(d @ np.asarray(im["v"], float)), 2))
            r = ROI_RADIUS_MM
        return Op("measure_roi", {"viewport": vp["index"] - 1, "centre_mm": c, "radii_mm": (r, r)})

    def _septal_roi(self, st: dict[str, Any], s: dict[str, Any]) -> tuple[tuple[float, float], float] | None:
        """Where a reader measures native T1 / T2: a circle inside the septal myocardium of the map's slice
        (its centre the septal pixel furthest from the wall's edges), as ((u, v) mm from the image centre,
        radius mm); None when the slice shows no septum."""
        from scipy import ndimage

        from rendering import mr_mapping as mm
        from scoring.oracles.mr_mapping import reformed_map

        grid = reformed_map(st, s, self.oracle).grid
        base, apex = self.oracle.lv_long_axis
        mask = mm.myocardial_roi(self.oracle.runtime, grid, base, apex, mid_third=False, erode_px=0, septum=True)
        if not mask.any():
            return None
        du, dv = grid.pixel_mm
        depth = ndimage.distance_transform_edt(mask, sampling=(dv, du))
        i, j = np.unravel_index(int(np.argmax(depth)), depth.shape)
        uu, vv = grid.uv()
        im = s["images"][0]
        d = np.asarray(grid.pose.centre, float) - np.asarray(im["centre_mm"], float)
        c = (round(float(uu[i, j] + d @ np.asarray(im["u"], float)), 2),
             round(float(vv[i, j] + d @ np.asarray(im["v"], float)), 2))
        return c, round(float(np.clip(depth[i, j] - 0.5 * max(du, dv), SEPTAL_ROI_MIN_MM, SEPTAL_ROI_MAX_MM)), 2)

    def _param_op(self, st: dict[str, Any], row: dict[str, Any]) -> Op | None:
        """The next mapping parameter to set on the open row (None: all valid for this heart rate)."""
        from consoles.mr import mapping
        from consoles.mr.protocols import get_protocol
        from consoles.mr.row_params import RowParams
        from scoring.oracles.mr_mapping import MOLLI_SCHEMES
        from scoring.registry.mr import MAP_THICKNESS_MM as RANGE

        p = row["params"]
        if p["trigger"] != "ecg":
            return Op("set_param", {"name": "trigger", "value": "ecg"})
        hr = st["header"]["heart_rate_bpm"] or st["physio"]["heart_rate_bpm"]
        delay, window = mapping.recommended_timing(RowParams.from_dict(p), get_protocol(row["protocol"]), float(hr))
        if abs(p["acq_window_ms"] - window) > 0.5:
            return Op("set_param", {"name": "acq_window_ms", "value": window})
        if abs(p["trigger_delay_ms"] - delay) > 0.5:
            return Op("set_param", {"name": "trigger_delay_ms", "value": delay})
        if not RANGE[0] <= p["thickness_mm"] <= RANGE[1]:
            return Op("set_param", {"name": "thickness_mm", "value": MAP_THICKNESS_MM})
        if row["protocol"] == "t1_map_molli" and p.get("scheme") not in MOLLI_SCHEMES:
            return Op("set_param", {"name": "scheme", "value": MOLLI_SCHEMES[0]})
        return None

    def _shim_fix_op(self, st: dict[str, Any], row: dict[str, Any]) -> Op | None:
        """Move and size the open row's shim box onto the heart (after a map showed a shim cause)."""
        if not st["layout"]["shim_box_visible"]:
            return Op("set_shim_box_visible", {"visible": True})
        return self.shim_op(st, row)

    def _map_op(self, st: dict[str, Any], protocol: str, inspect: bool) -> Op | None:
        """Plan, set, acquire, inspect and (if a cause shows) correct one map; None when its last map is clean."""
        if st["header"]["scanner"]["status"] == "scanning":
            return self._wait_running(st)
        s = self._last_map(st, protocol)
        if s is not None:
            if inspect and not self._inspected(st, s["uid"]):
                return self._inspect_op(st, s)
            if not s["mapping"]["causes"] and self._geometry_clean(s):
                return None
        rows = [r for r in self._rows_of(st, protocol) if r["status"] in ("pending", "stopped")]
        if not rows:
            if s is None:
                return Op("add_protocol", {"pid": protocol})
            return Op("repeat", {"uid": s["row"]})
        row = next((r for r in rows if r["uid"] == st["open_row"]), rows[0])
        if st["open_row"] != row["uid"]:
            return Op("open", {"uid": row["uid"]})
        normal, centre = self.mid_sax_target()
        op = self.plane_op(st, row, normal, centre)
        if op is not None:
            return op
        op = self._param_op(st, row)
        if op is not None:
            return op
        shim_seen = any(set(SHIM_CAUSES) & set((x.get("mapping") or {}).get("causes") or ())
                        for x in st["series"] if not x["prior"])
        if shim_seen:
            op = self._shim_fix_op(st, row)
            if op is not None:
                return op
        return Op("go")

    def _mapping_chain(self, st: dict[str, Any], protocols: tuple[str, ...], inspect: bool) -> Op:
        if not any(s["localizer"] for s in st["series"]):
            if st["header"]["scanner"]["status"] == "scanning":
                return self._wait_running(st)
            loc = [r for r in st["queue"] if r["protocol"] == "localizer_3plane"]
            if not loc:
                return Op("add_protocol", {"pid": "localizer_3plane"})
            return self._start_row_op(st, loc[0]["uid"])
        for protocol in protocols:  # rows of the later maps exist before planning (from an empty queue)
            if not self._rows_of(st, protocol):
                return Op("add_protocol", {"pid": protocol})
        for protocol in protocols:
            op = self._map_op(st, protocol, inspect)
            if op is not None:
                return op
        if st["header"]["scanner"]["status"] == "scanning":
            return self._wait_running(st)
        return Op("done")

    # ---- kinds ------------------------------------------------------------------------------------
    def _mapping_geometry(self, st):
        return self._mapping_chain(st, (self.task.protocol,), inspect=False)

    def _mapping_parameters(self, st):
        return self._mapping_chain(st, self.task.order, inspect=False)

    def _mapping_feedback(self, st):
        return self._mapping_chain(st, self.task.order, inspect=True)

    def _stopped_row_retry(self, st):
        uid = (st["start"].get("seeded") or {}).get("stop_fault_row")
        row = self._row(st, uid)
        if st["header"]["scanner"]["status"] == "scanning":
            return self._wait_running(st)
        if row["status"] == "done":
            return Op("done")
        if st["open_row"] != uid:
            return Op("open", {"uid": uid})
        return Op("go")
