"""CT bolus tracking: a component of the CT model (pure: no Qt).

Low-dose monitoring images start MONITOR_DELAY_S after the injection, one every MONITOR_INTERVAL_S,
until the ROI mean reaches the threshold (then the scan starts after the post-trigger delay) or
MONITOR_TIMEOUT_S passes. Each image and the delayed scan start are events on the model's
simulated-time scheduler.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from rendering import ct_physics

from consoles.common.model_base import ModelComponent, Rule, ScheduledEvent
from consoles.common.numeric import format_number
from consoles.common.params import Parameter

if TYPE_CHECKING:
    from consoles.ct.model import CTModel

MONITOR_DELAY_S = 8.0
MONITOR_INTERVAL_S = 1.0
MONITOR_TIMEOUT_S = 60.0
MONITOR_NOISE_HU = 18.0
ROI_RADIUS_MM = 5.0
DEFAULT_THRESHOLD_HU = 150.0
DEFAULT_TRIGGER_DELAY_S = 6.0
# Scheduler priorities of the bolus events: after the scanner's own events at the same instant.
PRIORITY_MONITOR = 3
PRIORITY_SCAN_START = 4

CONTRAST = Rule((lambda m: m.protocol is not None and m.protocol.contrast,
                 "Bolus tracking is only available in contrast protocols."))
# Monitoring slice and reference image: before the injection, on a scout, with the scanner idle.
SETUP_EDITABLE = CONTRAST & Rule(
    (lambda m: m.scout_status == "done", "Acquire the scout first."),
    (lambda m: m.bolus.status in ("off", "ready"), "Bolus tracking is already running."),
    (lambda m: m.scan_status == "idle", "The scanner is busy."),
)
# Threshold and delay may still be tuned while monitoring, until the trigger.
TRIGGER_EDITABLE = CONTRAST & Rule(
    (lambda m: m.bolus.status in ("off", "ready", "monitoring"), "Bolus tracking has triggered."),
)
CAN_START = CONTRAST & Rule(
    (lambda m: m.bolus.status == "ready", "Acquire the monitoring reference image first."),
    (lambda m: m.bolus.roi is not None, "Place the ROI on the monitoring image first."),
    (lambda m: m.confirmed, "Confirm the plan before starting the injection."),
    (lambda m: not m.busy, "The scanner is busy."),
)

PARAMETERS = (
    Parameter("monitor_z_mm", "Monitor slice", "mm", -2000, 2000, 1, 5.0, SETUP_EDITABLE,
              get=lambda m: m.bolus.shown_monitor_z(), set=lambda m, v: m.set_monitor_z(v), widget="monitor_z_field"),
    Parameter("threshold_hu", "Trigger at", "HU", 50, 400, 0, 10, TRIGGER_EDITABLE,
              get=lambda m: m.bolus.threshold_hu, set=lambda m, v: m.set_bolus_param("threshold_hu", v),
              widget="threshold_field"),
    Parameter("delay_s", "Scan delay", "s", 2, 30, 0, 1, TRIGGER_EDITABLE,
              get=lambda m: m.bolus.delay_s, set=lambda m, v: m.set_bolus_param("delay_s", v),
              widget="trigger_delay_field"),
)
PARAM = {p.name: p for p in PARAMETERS}

# Keys of the dump, in the order the console has always written them.
STATE_KEYS = ("status", "monitor_z_mm", "roi", "roi_radius_mm", "threshold_hu", "delay_s", "t_trigger", "t_scan",
              "next_sample_t")


class BolusTracking(ModelComponent):
    """Monitoring slice, ROI, trigger threshold and delay, and the monitoring run itself."""

    host: "CTModel"

    def __init__(self, host: "CTModel") -> None:
        super().__init__(host)
        self.status = "off"  # off | ready | monitoring | triggered | done
        self.monitor_z_mm: float | None = None
        self.roi: tuple[float, float] | None = None
        self.roi_radius_mm = ROI_RADIUS_MM
        self.threshold_hu = DEFAULT_THRESHOLD_HU
        self.delay_s = DEFAULT_TRIGGER_DELAY_S
        self.samples: list[tuple[float, float]] = []  # (s since injection, ROI HU)
        self.t_trigger: float | None = None
        self.t_scan: float | None = None
        self.next_sample_t: float | None = None
        self.image: np.ndarray | None = None  # the last monitoring (or reference) image, HU
        self._pending: list[ScheduledEvent] = []

    def __getitem__(self, key: str) -> Any:
        """Read access by dump key (b["roi"]), for code written against the former dict."""
        if key not in STATE_KEYS and key != "samples":
            raise KeyError(key)
        return getattr(self, key)

    # ---- setup --------------------------------------------------------------------------------
    def default_monitor_z(self) -> float:
        """Where the monitoring slice starts: 40 mm below the top of the planned range."""
        return round(self.host.start_mm - 40.0, 1)

    def shown_monitor_z(self) -> float:
        return self.monitor_z_mm if self.monitor_z_mm is not None else self.default_monitor_z()

    def on_scout_acquired(self) -> None:
        """A contrast protocol shows a monitoring line on the new scout; the user moves it."""
        p = self.host.protocol
        if p is not None and p.contrast and self.monitor_z_mm is None:
            self.monitor_z_mm = self.default_monitor_z()

    def set_monitor_z(self, z_mm: float) -> None:
        """Table position (mm) of the monitoring slice; a new reference image is needed after a move."""
        self._require_rule(SETUP_EDITABLE)
        top, bottom = self.host.table_limits()
        z = round(min(top, max(bottom, PARAM["monitor_z_mm"].bound(z_mm))), PARAM["monitor_z_mm"].decimals)
        if z != self.monitor_z_mm:
            self.monitor_z_mm = z
            self.status = "off"
            self.roi = None
            self.image = None
            self._log("monitor_z_changed", monitor_z_mm=z)
        self.host.message = ("Acquire the monitoring reference image, then click the descending aorta to place "
                             "the ROI.")
        self._changed("bolus")

    def _monitor_slice(self, t: float, rng: np.random.Generator | None) -> np.ndarray:
        h = self.host
        zs = float(h.subject_from_table_z(self.monitor_z_mm))
        img = h._hu_slab(zs - 2.5, zs + 2.5, h.hu_lut_at(t)).mean(axis=0)
        if rng is not None:
            img = img + MONITOR_NOISE_HU * 2.0 * ct_physics.box2_filter(
                rng.standard_normal(img.shape).astype(np.float32), axes=(0, 1))
        return img.astype(np.float32)

    def acquire_reference(self) -> None:
        """The unenhanced reference image at the monitoring slice, on which the ROI is placed."""
        self._require_rule(SETUP_EDITABLE)
        if self.monitor_z_mm is None:
            self.monitor_z_mm = self.default_monitor_z()
        self.image = self._monitor_slice(self.t, self.host.rng("monitor_ref", self.monitor_z_mm))
        self.status = "ready"
        self._log("monitor_reference_acquired", monitor_z_mm=self.monitor_z_mm)
        self.host.message = "Reference image ready: click the descending aorta to place the ROI."
        self._changed("bolus")

    def set_roi(self, x_mm: float, y_mm: float) -> None:
        """ROI centre in the monitoring image's millimetres, as a click on it gives them: x = gantry x
        (patient left +), y = posterior of the isocentre. Kept (and dumped as "roi") in subject mm."""
        self._require(self.image is not None, "Acquire the monitoring reference image first.")
        self._require(self.status != "done", "Bolus tracking has finished.")
        h = self.host
        self.roi = (round(float(x_mm) - h.frame.lateral_offset_mm, 1), round(float(y_mm) + h.y_iso_subject(), 1))
        self._log("roi_placed", x_mm=self.roi[0], y_mm=self.roi[1], monitor_z_mm=self.monitor_z_mm,
                  image_x_mm=round(float(x_mm), 1), image_y_mm=round(float(y_mm), 1))
        self.host.message = "ROI placed. Check threshold and delay, then Start injection."
        self._changed("bolus")

    def set_param(self, name: str, value: float) -> None:
        """Trigger threshold (HU) or post-trigger scan delay (s), clamped and rounded by its Parameter."""
        self._require(name in ("threshold_hu", "delay_s"), f"unknown bolus parameter {name}")
        self._require_rule(TRIGGER_EDITABLE)
        v = PARAM[name].clamp(value)
        if v != getattr(self, name):
            setattr(self, name, v)
            self._log("bolus_param_changed", name=name, value=v)
            p = PARAM[name]
            self.host.message = f"{p.label} {format_number(v, p.decimals, p.unit)}."
        self._changed("bolus")

    def roi_image_mm(self) -> tuple[float, float]:
        """The ROI centre in monitoring-image mm at the current table height (see set_roi)."""
        x, y = self.roi
        h = self.host
        return float(h.frame.gantry_x(x)), y - h.y_iso_subject()

    def roi_hu(self, img: np.ndarray) -> float:
        """Mean HU inside the ROI circle (the nearest pixel if the circle holds none)."""
        x, y = self.roi
        xs, ys = self.host.subject.world_x(), self.host.subject.world_y()
        r = self.roi_radius_mm
        inside = (xs[None, :] - x) ** 2 + (ys[:, None] - y) ** 2 <= r * r
        if not inside.any():
            return float(img[int(np.argmin(np.abs(ys - y))), int(np.argmin(np.abs(xs - x)))])
        return float(img[inside].mean())

    # ---- the monitoring run ---------------------------------------------------------------------
    def start(self) -> None:
        """Start the injection and the monitoring scans; the scan follows the trigger automatically."""
        self._require_rule(CAN_START)
        h = self.host
        h.t_injection = self.t
        self.status = "monitoring"
        self.samples = []
        self._schedule_sample(self.t + MONITOR_DELAY_S)
        self._log("injection_started", threshold_hu=self.threshold_hu, delay_s=self.delay_s)
        # times on the exam clock, not counts down: a message that stays up never goes stale
        h.message = f"Injection started at {self.t:.1f} s. Monitoring starts at {self.t + MONITOR_DELAY_S:.1f} s."
        self._changed("bolus")

    def _schedule_sample(self, t: float) -> None:
        self.next_sample_t = t
        self._pending.append(self.schedule(t, self._monitor_step, PRIORITY_MONITOR, "bolus_monitor"))

    def _monitor_step(self) -> None:
        """One low-dose monitoring image at the scheduled time and the trigger decision."""
        h = self.host
        img = self._monitor_slice(self.t, h.rng("monitor", len(self.samples)))
        self.image = img
        hu = round(self.roi_hu(img), 1)
        self.samples.append((round(self.t - h.t_injection, 2), hu))
        if hu >= self.threshold_hu:
            self.status = "triggered"
            self.t_trigger = round(self.t, 3)
            self.t_scan = round(self.t + self.delay_s, 3)
            self.next_sample_t = None
            self._pending.append(self.schedule(self.t_scan, self._scan_start, PRIORITY_SCAN_START, "bolus_scan"))
            self._log("bolus_triggered", roi_hu=hu, t_since_injection=round(self.t - h.t_injection, 2))
            h.message = f"Threshold reached ({hu:.0f} HU). Scan starts at {self.t_scan:.1f} s."
        elif self.t - h.t_injection >= MONITOR_TIMEOUT_S:
            self.status = "done"
            self.next_sample_t = None
            self._log("bolus_timeout")
            h.message = "Monitoring stopped: the threshold was not reached. Check the ROI position."
        else:
            self._schedule_sample(self.t + MONITOR_INTERVAL_S)
            h.message = f"Monitoring: ROI {hu:.0f} HU (threshold {self.threshold_hu:.0f} HU)."
        self._changed("bolus")

    def _scan_start(self) -> None:
        self.status = "done"
        self.t_scan = None
        h = self.host
        if h.confirmed and h.scan_status == "idle":
            h._start_scan()
        else:
            h.message = "Triggered, but the plan is not confirmed: scan did not start."

    def status_text(self) -> str:
        """The bolus page's status line: the step tracking is at now (issue 34: "Confirm the plan, then start the
        injection" stayed after the plan was confirmed), and the injection's time."""
        h = self.host
        if self.status == "ready" and self.roi is not None:
            text = ("ROI placed; the scanner is busy." if h.busy else
                    "ROI placed, plan confirmed: start the injection." if h.confirmed else
                    "ROI placed. Confirm the plan, then start the injection.")
        else:
            text = {"off": "Set the monitoring slice and take a reference image.",
                    "ready": "Click the descending aorta on the image to place the ROI.",
                    "monitoring": "Monitoring the ROI (1 image/s). Scan starts automatically at the threshold; "
                                  "Scan starts it now.",
                    "triggered": f"Triggered: scan starts at {self.t_scan or 0:.1f} s.",
                    "done": "Bolus tracking finished."}[self.status]
        if h.t_injection is not None:
            text += f"\nInjection started at {h.t_injection:.1f} s ({h.t - h.t_injection:.0f} s ago)."
        return text

    def on_manual_scan(self) -> None:
        """The user pressed Scan while monitoring or waiting for the delay: tracking ends now."""
        if self.status in ("monitoring", "triggered"):
            self.status = "done"
            for ev in self._pending:
                self.host.scheduler.cancel(ev)
            self._pending = []
            self._log("bolus_manual_start", t_since_injection=round(self.t - self.host.t_injection, 2))

    # ---- dump -----------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """The "bolus" section of the CT state dump (tuples as lists)."""
        d = {k: getattr(self, k) for k in STATE_KEYS}
        d["roi"] = list(self.roi) if self.roi is not None else None
        d["roi_image_mm"] = [round(v, 1) for v in self.roi_image_mm()] if self.roi is not None else None
        d["samples"] = [list(x) for x in self.samples]
        return d
