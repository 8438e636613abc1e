"""`medimageos bench`: step overhead and reset time on this machine, as medians (and p95).

Step overhead = input injected -> console settled -> screenshot captured (PNG encoding is
reported separately; it is not part of the loop's latency budget). Reset = console launch ->
first frame captured. Uses the first CT task on the development subject.
"""
from __future__ import annotations

import json
import statistics
import sys
import time

import numpy as np

from runner.actions import Action
from runner.capture import ScreenCapture, encode_png
from runner.console_process import ConsoleProcess
from runner.display import VirtualDisplay
from tasks.card import load_card
from runner.xinput import open_input

TASK = "ct_ui_smoke_routine"


def _p95(xs: list[float]) -> float:
    return float(np.percentile(xs, 95))


def main(json_out: bool = False, steps: int = 60, resets: int = 5) -> int:
    card = load_card(TASK)
    w, h = card.observation.width, card.observation.height
    figures: dict[str, float | int | str] = {"task": TASK, "subject": "dev", "steps": steps, "resets": resets}
    with VirtualDisplay(w, h) as disp:
        reset_s = []
        for _ in range(resets):
            t0 = time.perf_counter()
            con = ConsoleProcess(disp, "ct", TASK, "dev", 0)
            con.start()
            cap = ScreenCapture(disp.name)
            cap.grab_rgb()
            reset_s.append(time.perf_counter() - t0)
            cap.close()
            con.stop()
        con = ConsoleProcess(disp, "ct", TASK, "dev", 0)
        con.start()
        inp = open_input(disp.name)
        cap = ScreenCapture(disp.name)
        geo = con.geometry()["geometry"]
        # Clicks alternating between two protocol items and the empty header (Qt repaints), then
        # drags of the scan-range edge on the AP scout (VTK viewport re-renders every step).
        targets = [geo["protocol_item:chest_routine"], geo["protocol_item:renal"], [600, 10, 10, 10]]
        actions = []
        for i in range(steps):
            x, y, rw, rh = targets[i % len(targets)]
            actions.append(Action("click", x=x + rw // 2, y=y + rh // 2))
        step_ms, settle_ms, grab_ms, png_ms = _time_steps(inp, con, cap, actions)
        for name in ("protocol_item:chest_routine", "load_protocol", "acquire_scout"):
            inp.perform(Action("click", x=geo[name][0] + 5, y=geo[name][1] + 5))
            con.settle(5.0)
        edge = con.geometry()["geometry"]["scout_ap.range_start_edge"]
        x, y = edge[0] + 7, edge[1] + 7
        drags = []
        for i in range(steps):
            dy = 20 if i % 2 == 0 else -20
            drags.append(Action("drag", x=x, y=y, x2=x, y2=y + dy))
            y += dy
        drag_ms, drag_settle_ms, _, _ = _time_steps(inp, con, cap, drags)
        cap.close()
        inp.close()
        con.stop()
    figures.update({
        "step_overhead_ms_median": round(statistics.median(step_ms), 2),
        "step_overhead_ms_p95": round(_p95(step_ms), 2),
        "settle_ms_median": round(statistics.median(settle_ms), 2),
        "capture_ms_median": round(statistics.median(grab_ms), 2),
        "png_encode_ms_median": round(statistics.median(png_ms), 2),
        "viewport_drag_step_ms_median": round(statistics.median(drag_ms), 2),
        "viewport_drag_step_ms_p95": round(_p95(drag_ms), 2),
        "viewport_drag_settle_ms_median": round(statistics.median(drag_settle_ms), 2),
        "reset_s_median": round(statistics.median(reset_s), 3),
        "reset_s_max": round(max(reset_s), 3),
    })
    if json_out:
        print(json.dumps(figures, indent=2))
    else:
        for k, v in figures.items():
            print(f"{k:32s} {v}")
    return 0


def _time_steps(inp, con, cap, actions):
    """Per step: inject -> settle -> capture (the loop's latency), and PNG encoding separately."""
    step_ms, settle_ms, grab_ms, png_ms = [], [], [], []
    for a in actions:
        t0 = time.perf_counter()
        inp.perform(a)
        t1 = time.perf_counter()
        con.settle(0.5)
        t2 = time.perf_counter()
        rgb = cap.grab_rgb()
        t3 = time.perf_counter()
        encode_png(rgb)
        t4 = time.perf_counter()
        step_ms.append((t3 - t0) * 1e3)
        settle_ms.append((t2 - t1) * 1e3)
        grab_ms.append((t3 - t2) * 1e3)
        png_ms.append((t4 - t3) * 1e3)
    return step_ms, settle_ms, grab_ms, png_ms


if __name__ == "__main__":
    sys.exit(main("--json" in sys.argv))
