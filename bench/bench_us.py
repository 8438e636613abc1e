"""Benchmark ultrasound B-mode formation (no Qt): one frame of 256 scan lines x 512 samples scan-converted to
512 x 512 (median ms), split into the acquisition and display stages, plus a probe move (pose -> geometry).

    .venv/bin/python bench/bench_us.py [--subject dev] [--repeats 30] [--json]

Targets: issue 13 asks <= 25 ms median for one frame on one core (the session brief: <= 30 ms). Every run moves
the probe by 0.5 mm so nothing is served from a cache that a live drag would miss (the scan-conversion tables
depend on depth only and are reused, as in the console). The view is a right-kidney long axis from the flank.
model_probe_drag_step is the console model's share of a probe-drag step (move, re-form, display; no Qt).
The frame is formed as the presets form it, with spatial compounding on (us_physics.COMPOUND_DEFAULT_LOOKS
steered looks); frame_compound_off is the single-look frame (the figure before compounding existed).
The machine's load average is printed: other processes share the cores, so compare medians with it.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.timing import parse_args, record, report  # noqa: E402


def main(argv=None) -> int:
    args = parse_args(argv, default_repeats=30)
    from rendering import us_image as U
    from rendering.subjects import load_runtime

    rt = load_runtime(args.subject)
    pose = U.ProbePose(z_mm=-295.0, azimuth_deg=-85.0, rotation_deg=5.0, tilt_deg=-15.0)
    geom = U.ProbeGeometry.from_pose(rt, pose)
    from rendering import us_physics as P

    acq = U.Acquisition(frequency_mhz=3.5, depth_mm=160.0, focus_mm=80.0, n_lines=256, n_samples=512,
                        compound=P.COMPOUND_DEFAULT_LOOKS)
    acq_off = U.Acquisition(frequency_mhz=3.5, depth_mm=160.0, focus_mm=80.0, n_lines=256, n_samples=512)
    disp = U.Display(60.0, "B", (512, 512))
    load0 = os.getloadavg()
    beam = U.acquire_beam(rt, geom, acq)  # first call imports scipy.ndimage and builds the tables
    U.display_frame(beam, disp)

    def frame(i):
        U.display_frame(U.acquire_beam(rt, geom.translated((0.0, 0.0, 0.5 * (i % 7))), acq), disp)

    def frame_off(i):
        U.display_frame(U.acquire_beam(rt, geom.translated((0.0, 0.0, 0.5 * (i % 7))), acq_off), disp)

    def acquire(i):
        U.acquire_beam(rt, geom.translated((0.0, 0.0, 0.5 * (i % 7))), acq)

    def display(i):
        U.display_frame(beam, disp)

    def probe_move(i):
        U.ProbeGeometry.from_pose(rt, U.ProbePose(-295.0 + 0.5 * (i % 7), -85.0, 5.0, -15.0))

    from consoles.us.model import USModel

    model = USModel(rt, "bench", 0, {"pose": pose.to_dict(), "preset": "Renal"}, out_shape=(512, 512))
    model.frame()

    def model_drag(i):  # what one drag event costs the console model: move, re-form, display
        model.move_probe(dz_mm=0.5 if i % 2 else -0.5)
        model.frame()

    out: dict[str, float | str] = {}
    for name, fn in (("frame_256x512_to_512x512", frame), ("frame_compound_off", frame_off), ("acquire_beam", acquire),
                     ("display_scan_convert", display), ("pose_to_geometry", probe_move),
                     ("model_probe_drag_step", model_drag)):
        record(out, name, fn, args.repeats)
    return report(out, args, load0)


if __name__ == "__main__":
    sys.exit(main())
