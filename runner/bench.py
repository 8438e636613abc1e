"""`medimageos bench [--json]`: per-step cost, reset, launch and memory per modality, measured in one run.

Per modality that exists (a `consoles/<modality>` package and a task card), on its first task and
the development subject, one console on one Xvfb:

- `step_ms`: inject a UI click -> console settled -> screenshot captured -> PNG bytes in hand
  (median and p95); `drag_step_ms` the same for a drag on a viewport (CT: a range-edge handle; MR: a
  localizer image from the series list onto a viewport; US: the probe footprint on the body map, the live
  image re-formed); MR also `plan_drag_step_ms`, a planning grip
  (the SAX row's centre) dragged on a localizer image, every viewport showing the group re-drawn;
- `capture_ms` (grab + colour conversion) and `encode_ms` (PNG) medians, over all those steps;
- `launch_s`: a fresh console, launch -> first frame captured (median);
- `reset_s`: the same console reset in place to a new episode -> first frame captured (median);
- `pss_mib`: PSS of runner worker + Xvfb + console after the steps (runner/memory.py);
- `ui_settle_ms`: the UI steps' inject -> settled part alone (the console's own overhead, without the
  screenshot, whose PNG encoding grows with what the screen shows: four MR images encode slower than
  CT's form page);
- `ui_step_vs_ct`, `ui_settle_vs_ct`: each other console's UI step and settle medians over CT's, in the
  same run (issue 10: MR's step overhead within 10 %).
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from runner.actions import Action
from runner.capture import ScreenCapture, encode_png
from runner.console_process import ConsoleProcess
from runner.display import VirtualDisplay
from runner.memory import pss_mib
from runner.xinput import open_input

ROOT = Path(__file__).resolve().parent.parent
# per modality; otherwise its first card. MR: the localizer is acquired at the start, so its images
# can be dragged onto viewports.
BENCH_TASK = {"ct": "ct_ui_smoke_routine", "mr": "mr_drag_coronal_to_viewport2_v1",
              "us": "us_kidney_long_axis_search_v1"}


def _p95(xs: list[float]) -> float:
    return float(np.percentile(xs, 95))


def _med(xs: list[float], nd: int = 2) -> float:
    return round(statistics.median(xs), nd)


def existing_modalities() -> list[str]:
    """Modalities with a console package and at least one task card, in a fixed order."""
    from tasks.card import select_cards

    out = []
    for m in ("ct", "mr", "us"):
        if not (ROOT / "consoles" / m / "__main__.py").is_file():
            continue
        try:
            if select_cards(m):
                out.append(m)
        except (ValueError, KeyError):
            continue
    return out


class _StepTimer:
    """inject -> settle -> grab -> convert -> encode, per step."""

    def __init__(self, inp, con: ConsoleProcess, cap: ScreenCapture) -> None:
        self.inp, self.con, self.cap = inp, con, cap
        self.capture_ms: list[float] = []
        self.encode_ms: list[float] = []
        self.settle_ms: list[float] = []  # inject -> settled, of the last run

    def run(self, actions: list[Action]) -> list[float]:
        step_ms = []
        self.settle_ms = []
        for a in actions:
            t0 = time.perf_counter()
            self.inp.perform(a)
            self.con.settle(0.5)
            t1 = time.perf_counter()
            rgb = self.cap.grab_rgb()
            t2 = time.perf_counter()
            encode_png(rgb)
            t3 = time.perf_counter()
            step_ms.append((t3 - t0) * 1e3)
            self.settle_ms.append((t1 - t0) * 1e3)
            self.capture_ms.append((t2 - t1) * 1e3)
            self.encode_ms.append((t3 - t2) * 1e3)
        return step_ms


def _ct_actions(con: ConsoleProcess, inp, steps: int) -> tuple[list[Action], Callable[[], list[Action]]]:
    """CT: clicks on two protocol items and the empty header; then (after a scout) range-edge drags."""
    geo = con.geometry()["geometry"]
    targets = [geo["protocol_item:chest_routine"], geo["protocol_item:renal"], [600, 10, 10, 10]]
    clicks = [Action("click", x=targets[i % 3][0] + targets[i % 3][2] // 2, y=targets[i % 3][1] + targets[i % 3][3] // 2)
              for i in range(steps)]

    def drags() -> list[Action]:
        g = con.geometry()["geometry"]
        for name in ("protocol_item:chest_routine", "load_protocol", "acquire_scout"):
            inp.perform(Action("click", x=g[name][0] + 5, y=g[name][1] + 5))
            con.settle(5.0)
        edge = con.geometry()["geometry"]["scout_ap.range_start_edge"]
        x, y = edge[0] + 7, edge[1] + 7
        out = []
        for i in range(steps):
            dy = 20 if i % 2 == 0 else -20
            out.append(Action("drag", x=x, y=y, x2=x, y2=y + dy))
            y += dy
        return out

    return clicks, drags


def _centre(rect: list[int]) -> tuple[int, int]:
    return rect[0] + rect[2] // 2, rect[1] + rect[3] // 2


def _mr_actions(con: ConsoleProcess, inp, steps: int) -> tuple[list[Action], Callable[[], list[Action]]]:
    """MR: clicks on two queue rows and the empty header (UI steps, as CT's); then drags of localizer
    images from the series list onto viewports 1-4 in turn (each re-renders a viewport)."""
    geo = con.geometry()["geometry"]
    rows = sorted(k for k in geo if k.startswith("queue_row:"))
    targets = [geo[rows[1]], geo[rows[2]], [600, 10, 10, 10]]
    clicks = [Action("click", x=_centre(targets[i % 3])[0], y=_centre(targets[i % 3])[1]) for i in range(steps)]

    def drags() -> list[Action]:
        g = con.geometry()["geometry"]
        entries = sorted(k for k in g if k.startswith("series_item:"))
        out = []
        for i in range(steps):
            (x, y), (x2, y2) = _centre(g[entries[i % len(entries)]]), _centre(g[f"viewport{i % 4 + 1}"])
            out.append(Action("drag", x=x, y=y, x2=x2, y2=y2))
        return out

    return clicks, drags


def _mr_plan_drags(con: ConsoleProcess, inp, steps: int) -> list[Action]:
    """MR graphical planning: open the SAX row (queue row 4), then drag its centre grip on the first
    viewport that shows one 12 px right and back (each step re-draws the group on every viewport)."""
    g = con.geometry()["geometry"]
    x, y = _centre(g["queue_row:4"])
    inp.perform(Action("double_click", x=x, y=y))
    con.settle(0.5)
    g = con.geometry()["geometry"]
    grips = sorted(k for k in g if k.endswith(".handle:centre"))
    if not grips:
        return []
    x, y = _centre(g[grips[0]])
    return [Action("drag", x=x + (12 if i % 2 else 0), y=y, x2=x + (0 if i % 2 else 12), y2=y) for i in range(steps)]


def _us_actions(con: ConsoleProcess, inp, steps: int) -> tuple[list[Action], Callable[[], list[Action]]]:
    """Ultrasound: clicks on two grey-map buttons and the empty header (UI steps: the frame is re-mapped,
    not re-formed); then drags of the probe footprint on the body map, 12 px up and down in turn (each
    re-forms the live image from the subject: issue 13's probe-drag step, target <= 60 ms)."""
    geo = con.geometry()["geometry"]
    targets = [geo["grey_map:A"], geo["grey_map:B"], [600, 10, 10, 10]]
    clicks = [Action("click", x=_centre(targets[i % 3])[0], y=_centre(targets[i % 3])[1]) for i in range(steps)]

    def drags() -> list[Action]:
        out = []
        for i in range(steps):
            x, y = _centre(con.geometry()["geometry"]["probe_footprint"]) if i == 0 else (x2, y2)
            x2, y2 = x, y + (-12 if i % 2 == 0 else 12)
            out.append(Action("drag", x=x, y=y, x2=x2, y2=y2))
        return out

    return clicks, drags


ACTIONS = {"ct": _ct_actions, "mr": _mr_actions, "us": _us_actions}
PLAN_DRAGS = {"mr": _mr_plan_drags}  # `plan_drag_step_ms`: a planning grip dragged on a viewport


def bench_modality(disp: VirtualDisplay, modality: str, steps: int, launches: int) -> dict[str, Any]:
    """The figures of one modality (see the module docstring)."""
    from tasks.card import select_cards

    task = BENCH_TASK.get(modality) or select_cards(modality)[0].id
    launch_s, reset_s = [], []
    cap = ScreenCapture(disp.name)
    for _ in range(launches):
        t0 = time.perf_counter()
        con = ConsoleProcess(disp, modality, task, "dev", 0)
        con.start()
        cap.grab_rgb()
        launch_s.append(time.perf_counter() - t0)
        con.stop()
    con = ConsoleProcess(disp, modality, task, "dev", 0)
    con.start()
    inp = open_input(disp.name)
    try:
        timer = _StepTimer(inp, con, cap)
        clicks, drags = ACTIONS[modality](con, inp, steps)
        step_ms = timer.run(clicks)
        ui_settle_ms = timer.settle_ms
        drag_ms = timer.run(drags())
        plan_ms = timer.run(PLAN_DRAGS[modality](con, inp, steps)) if modality in PLAN_DRAGS else []
        parts = {"worker": pss_mib(os.getpid()), "xvfb": pss_mib(disp.proc.pid), "console": pss_mib(con.proc.pid)}
        pss = sum(parts.values())
        for i in range(launches):
            t0 = time.perf_counter()
            con.reset(task, "dev", i + 1)
            cap.grab_rgb()
            reset_s.append(time.perf_counter() - t0)
    finally:
        inp.close()
        cap.close()
        con.stop()
    out: dict[str, Any] = {
        "task": task, "subject": "dev", "steps": steps, "launches": launches,
        "step_ms": {"median": _med(step_ms), "p95": round(_p95(step_ms), 2)},
        "ui_settle_ms": _med(ui_settle_ms),
        "drag_step_ms": {"median": _med(drag_ms), "p95": round(_p95(drag_ms), 2)},
        **({"plan_drag_step_ms": {"median": _med(plan_ms), "p95": round(_p95(plan_ms), 2)}} if plan_ms else {}),
        "capture_ms": _med(timer.capture_ms), "encode_ms": _med(timer.encode_ms),
        "launch_s": _med(launch_s, 3), "reset_s": _med(reset_s, 3),
        "pss_mib": round(pss, 1), "pss_parts_mib": {k: round(v, 1) for k, v in parts.items()},
    }
    return out


def run_bench(steps: int = 60, launches: int = 5, modalities: list[str] | None = None) -> dict[str, Any]:
    """{"cpus", "modalities": {modality: figures}}: every figure from this one run."""
    mods = modalities or existing_modalities()
    with VirtualDisplay(1280, 800) as disp:
        figures = {m: bench_modality(disp, m, steps, launches) for m in mods}
    # other load on the machine moves every figure: say how busy it was
    out = {"cpus": os.cpu_count(), "load_average_1min": round(os.getloadavg()[0], 2), "modalities": figures}
    if "ct" in figures:  # UI step overhead of every other console against CT's, measured in this run
        ct = figures["ct"]["step_ms"]["median"]
        out["ui_step_vs_ct"] = {m: round(f["step_ms"]["median"] / ct, 3) for m, f in figures.items() if m != "ct"}
        ct_settle = figures["ct"]["ui_settle_ms"]
        out["ui_settle_vs_ct"] = {m: round(f["ui_settle_ms"] / ct_settle, 3) for m, f in figures.items() if m != "ct"}
    return out


def main(json_out: bool = False, steps: int = 60, resets: int = 5, modalities: list[str] | None = None) -> int:
    """`resets` launches and as many resets in place are timed; `steps` clicks and as many drags; every
    existing modality unless `modalities` names some."""
    unknown = sorted(set(modalities or []) - set(existing_modalities()))
    if unknown:
        print(f"bench: no console for modality {', '.join(unknown)} (have {', '.join(existing_modalities())})",
              file=sys.stderr)
        return 2
    report = run_bench(steps, resets, modalities)
    if json_out:
        print(json.dumps(report, indent=2))
        return 0
    for m, ratio in report.get("ui_step_vs_ct", {}).items():
        print(f"{m} UI step median / CT's: {ratio:.3f}; settle only: {report['ui_settle_vs_ct'][m]:.3f}")
    for m, f in report["modalities"].items():
        print(f"{m} ({f['task']}, subject dev; {f['steps']} steps, {f['launches']} launches/resets)")
        for k, v in f.items():
            if k not in ("task", "subject", "steps", "launches"):
                print(f"  {k:20s} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main("--json" in sys.argv))
