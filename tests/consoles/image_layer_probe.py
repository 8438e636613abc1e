"""Drives one ImageViewport through changes of its image layer and of its overlays, for the image
layer cache's display test. Run under Xvfb as its own process (the test process never creates a
QApplication):

    python -m tests.consoles.image_layer_probe --out DIR

After each change it renders a frame the way a settle does and captures the screen, then makes
the viewport draw everything again (cache invalidated) and captures that too. DIR/steps.json holds,
per change: whether the frame put the stored image layer back, and the screen digests of the frame,
of the full redraw and of the frame before.
"""
from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import numpy as np


def _scene_image(shift: float = 0.0) -> np.ndarray:
    """A smooth image with structure at every scale (interpolation shows in every pixel)."""
    yy, xx = np.mgrid[0:120, 0:90].astype(np.float32)
    return (50 + 40 * np.sin(xx / 7.0 + shift) * np.cos(yy / 11.0) + 0.2 * xx).astype(np.float32)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.consoles.image_layer_probe")
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    from consoles.common.determinism import apply_environment, configure_application

    apply_environment()
    import os

    from PySide6 import QtCore, QtGui, QtWidgets

    from consoles.common import overlays as ov
    from consoles.common import viewport as vpmod
    from consoles.common.colormaps import get_colormap
    from runner.capture import ScreenCapture

    vpmod.MOTION_DELIVERY["mode"] = "settle"  # frames only when the probe renders them
    app = QtWidgets.QApplication(["image_layer_probe"])
    configure_application(app, benchmark_mode=True)
    window = QtWidgets.QWidget()
    window.setFixedSize(640, 520)
    window.move(0, 0)
    lay = QtWidgets.QVBoxLayout(window)
    lay.setContentsMargins(0, 0, 0, 0)
    vp = vpmod.ImageViewport(window, "probe")
    lay.addWidget(vp)
    window.show()
    vp.Initialize()
    capture = ScreenCapture(os.environ["DISPLAY"])

    def pump() -> None:
        for _ in range(3):
            app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents)
            QtCore.QCoreApplication.sendPostedEvents()
        QtGui.QGuiApplication.sync()

    def digest() -> str:
        return hashlib.sha256(capture.grab_rgb().tobytes()).hexdigest()

    def frame(render) -> str:
        pump()
        render()
        vp.sync_display()
        return digest()

    def overlays(y: float, text: str = "Start") -> ov.OverlaySet:
        o = ov.OverlaySet()
        o.add(ov.Box("range", 10.0, y - 40.0, 80.0, y, ov.YELLOW, fill_opacity=0.15))
        o.add(ov.Handle("edge", 45.0, y))
        o.add(ov.Label("start", 12.0, y - 4.0, f"{text} {y:.1f}"))
        o.add(ov.Text("title", 8, 8, "Probe", ov.WHITE, 13, "left", True, valign="top"))
        return o

    vp.set_view_box(0.0, 90.0, -120.0, 0.0)
    vp.set_image(_scene_image(), 0.5, -0.5, 1.0, 1.0)
    vp.set_window_level(120.0, 50.0)
    vp.set_overlays(overlays(-20.0))
    previous = frame(vp.render_pending)

    steps = []

    def step(name: str, change, render=None) -> None:
        nonlocal previous
        change()
        before = vp._image_layer.reused
        vp._needs_render = True
        shown = frame(render or vp.render_pending)
        reused = vp._image_layer.reused - before
        vp._image_layer.invalidate()
        full = frame(vp.render_now)
        steps.append({"name": name, "reused": reused, "frame": shown, "full_redraw": full, "previous": previous})
        previous = full

    step("overlays_moved", lambda: vp.set_overlays(overlays(-35.0)))
    step("label_text_changed", lambda: vp.set_overlays(overlays(-35.0, "Begin")))
    step("window_level", lambda: vp.set_window_level(80.0, 60.0))
    step("overlays_moved_again", lambda: vp.set_overlays(overlays(-50.0)))
    step("new_image", lambda: vp.set_image(_scene_image(1.0), 0.5, -0.5, 1.0, 1.0))
    step("view_box", lambda: vp.set_view_box(-10.0, 100.0, -125.0, 5.0))
    step("colour_map", lambda: vp.set_color_map(get_colormap("hot", "ms"), "T1 map"))
    step("overlays_over_colour_map", lambda: vp.set_overlays(overlays(-65.0)))
    step("grey_again", lambda: vp.set_color_map(None))
    # a render nobody announced (VTK's or Qt's own) after a change draws the image layer
    step("unprepared_render", lambda: vp.set_window_level(150.0, 40.0), vp.GetRenderWindow().Render)
    step("overlays_after_unprepared", lambda: vp.set_overlays(overlays(-80.0)))
    step("no_image", lambda: vp.set_image(None))
    step("placeholder_text", lambda: vp.set_placeholder("Nothing acquired"))
    step("overlays_over_placeholder", lambda: vp.set_overlays(overlays(-95.0)))
    (args.out / "steps.json").write_text(json.dumps(steps, indent=1))
    capture.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
