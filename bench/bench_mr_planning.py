"""MR graphical planning: the oblique reslice and a viewport drag step on the real console (medians).

    .venv/bin/python bench/bench_mr_planning.py [steps]

- reslice: 256x256 pixels of 1 mm on a double-oblique plane of the dev subject (bench_reslice's case);
- drag step: the open SAX row's centre grip on the transverse localizer dragged 12 px and back,
  alternately; "settled" = inject (XTEST press-move-release) -> the console settled (every viewport
  showing the group re-rendered); "+ capture" adds the screenshot grab and PNG encode an agent's
  step also pays. Also a rotate-grip drag (re-draws the group's cut on all three localizers).
Targets (issue 11): reslice <= 10 ms, drag step (settled) <= 60 ms.
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_reslice import median_ms  # noqa: E402
from rendering.geometry import PlanePose, ResliceGrid, reslice  # noqa: E402
from rendering.subjects import load_runtime  # noqa: E402
from runner.actions import Action  # noqa: E402
from runner.capture import ScreenCapture, encode_png  # noqa: E402
from runner.console_process import ConsoleProcess  # noqa: E402
from runner.display import VirtualDisplay  # noqa: E402
from runner.xinput import open_input  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
INITIAL = {"queue": [{"protocol": "localizer_3plane", "status": "done"}, {"protocol": "cine_sax"}],
           "open": 2, "layout": {"layout": "2x2"}}


def _card(tmp: Path) -> str:
    base = json.loads((ROOT / "tasks/ct/ct_ui_smoke_routine/task.json").read_text())
    base.update(id="mr_planning_bench", modality="mr", title="MR planning bench", goal="Bench MR planning drags.",
                initial_state=INITIAL, perturbations={}, oracle="none", workflow_stages=[])
    d = tmp / "mr_planning_bench"
    d.mkdir(parents=True, exist_ok=True)
    (d / "task.json").write_text(json.dumps(base))
    return str(d / "task.json")


def reslice_ms() -> float:
    s = load_runtime("dev")
    grid = ResliceGrid.centred(PlanePose.from_normal((0.0, -100.0, 0.0), (0.3, 0.2, 0.9), 20.0), 256.0, 1.0)
    hu = s.ct_hu_lut()[s.labels]
    return median_ms(lambda: reslice(hu, s.origin_mm, s.spacing_mm, grid, order=1))


def drag_steps(steps: int) -> dict[str, float]:
    out: dict[str, list[float]] = {"centre_settled": [], "centre_with_capture": [], "rotate_settled": []}
    with tempfile.TemporaryDirectory() as tmp, VirtualDisplay(1280, 800) as disp:
        con = ConsoleProcess(disp, "mr", _card(Path(tmp)), "dev", 0, log_path=Path(tmp) / "console.log")
        con.start()
        inp, cap = open_input(disp.name), ScreenCapture(disp.name)
        try:
            inp.home(con.hello["window_id"], (1270, 790))
            con.settle(0.0)
            for i in range(steps):
                x, y, w, h = con.geometry()["geometry"]["viewport3.handle:centre"]
                x, y = x + w // 2, y + h // 2
                dx = 12 if i % 2 == 0 else -12
                t0 = time.perf_counter()
                inp.perform(Action("drag", x=x, y=y, x2=x + dx, y2=y))
                con.settle(0.5)
                t1 = time.perf_counter()
                encode_png(cap.grab_rgb())
                t2 = time.perf_counter()
                out["centre_settled"].append((t1 - t0) * 1e3)
                out["centre_with_capture"].append((t2 - t0) * 1e3)
            for i in range(steps):
                x, y, w, h = con.geometry()["geometry"]["viewport3.handle:rotate"]
                x, y = x + w // 2, y + h // 2
                dy = 10 if i % 2 == 0 else -10
                t0 = time.perf_counter()
                inp.perform(Action("drag", x=x, y=y, x2=x, y2=y + dy))
                con.settle(0.5)
                out["rotate_settled"].append((time.perf_counter() - t0) * 1e3)
        finally:
            inp.close()
            cap.close()
            con.stop()
    return {k: round(float(np.median(v)), 2) for k, v in out.items()}


def main(steps: int = 40) -> None:
    print(f"oblique 256x256 reslice (float32, linear)  {reslice_ms():6.2f} ms median   (target <= 10)")
    figs = drag_steps(steps)
    print(f"MR centre-grip drag step, settled          {figs['centre_settled']:6.2f} ms median   (target <= 60)")
    print(f"  the same + screenshot grab and PNG       {figs['centre_with_capture']:6.2f} ms median")
    print(f"MR rotate-grip drag step, settled          {figs['rotate_settled']:6.2f} ms median")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
