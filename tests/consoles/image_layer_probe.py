"""Drives one ImageViewport through changes of its image layer and of its overlays, for the image
layer cache's display test. Run under Xvfb as its own process (the test process never creates a
QApplication):

    python -m tests.consoles.image_layer_probe --out DIR

Two viewports of one size side by side are told the same changes: the left one renders the way a
settle does, the right one draws everything every time (its cache invalidated). DIR/steps.json
holds, per change: whether the left frame put the stored image layer back, and the digests of the
left frame, of the right one (the full redraw) and of the left frame before.
"""
from __future__ import annotations

import hashlib
import json

import numpy as np

from tests.consoles.probe_process import start_probe


def _scene_image(shift: float = 0.0) -> np.ndarray:
    """A smooth image with structure at every scale (interpolation shows in every pixel)."""
    yy, xx = np.mgrid[0:120, 0:90].astype(np.float32)
    return (50 + 40 * np.sin(xx / 7.0 + shift) * np.cos(yy / 11.0) + 0.2 * xx).astype(np.float32)


def main(argv: list[str] | None = None) -> int:
    out, app, window = start_probe("image_layer_probe", argv, 1280, 520)
    import os

    from PySide6 import QtCore, QtGui, QtWidgets

    from consoles.common import overlays as ov
    from consoles.common import viewport as vpmod
    from consoles.common.colormaps import get_colormap
    from runner.capture import ScreenCapture

    vpmod.MOTION_DELIVERY["mode"] = "settle"  # frames only when the probe renders them
    lay = QtWidgets.QHBoxLayout(window)
    lay.setContentsMargins(0, 0, 0, 0)
    lay.setSpacing(0)
    # `vp` renders the way a settle does; `ref` is told the same and always draws everything
    vp, ref = vpmod.ImageViewport(window, "cached"), vpmod.ImageViewport(window, "reference")
    for v in (vp, ref):
        v.setFixedSize(640, 520)
        lay.addWidget(v)
    window.show()
    for v in (vp, ref):
        v.Initialize()
    capture = ScreenCapture(os.environ["DISPLAY"])

    def both(change) -> None:
        for v in (vp, ref):
            change(v)

    def frame(render_cached) -> tuple[str, str]:
        """Digests of the cached viewport's frame and of the reference's full redraw."""
        for _ in range(3):
            app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents)
            QtCore.QCoreApplication.sendPostedEvents()
        QtGui.QGuiApplication.sync()
        render_cached()
        ref._image_layer.invalidate()
        ref.render_now()
        for v in (vp, ref):
            v.sync_display()
        shot = capture.grab_rgb()
        return (hashlib.sha256(np.ascontiguousarray(shot[:520, :640]).tobytes()).hexdigest(),
                hashlib.sha256(np.ascontiguousarray(shot[:520, 640:1280]).tobytes()).hexdigest())

    def overlays(y: float, text: str = "Start") -> ov.OverlaySet:
        o = ov.OverlaySet()
        o.add(ov.Box("range", 10.0, y - 40.0, 80.0, y, ov.YELLOW, fill_opacity=0.15))
        o.add(ov.Handle("edge", 45.0, y))
        o.add(ov.Label("start", 12.0, y - 4.0, f"{text} {y:.1f}"))
        o.add(ov.Text("title", 8, 8, "Probe", ov.WHITE, 13, "left", True, valign="top"))
        return o

    both(lambda v: v.set_view_box(0.0, 90.0, -120.0, 0.0))
    both(lambda v: v.set_image(_scene_image(), 0.5, -0.5, 1.0, 1.0))
    both(lambda v: v.set_window_level(120.0, 50.0))
    both(lambda v: v.set_overlays(overlays(-20.0)))
    vp.refresh()
    previous = frame(vp.render_pending)[0]
    steps = []
    y = -20.0

    def step(name: str, change, render=None) -> None:
        nonlocal previous
        both(change)
        before = vp._image_layer.reused
        vp.refresh()  # a settle renders a viewport whose scene changed
        shown, full = frame(render or vp.render_pending)
        steps.append({"name": name, "reused": vp._image_layer.reused - before, "frame": shown, "full_redraw": full,
                      "previous": previous})
        previous = shown

    def move(name: str) -> None:
        nonlocal y
        y -= 5.0
        step(name, lambda v, y=y: v.set_overlays(overlays(y)))

    move("overlays_moved")  # the image scene's second frame: drawn and kept
    step("label_text_changed", lambda v: v.set_overlays(overlays(y, "Begin")))
    step("window_level", lambda v: v.set_window_level(80.0, 60.0))
    move("overlays_after_window_level")
    move("overlays_again")
    step("new_image", lambda v: v.set_image(_scene_image(1.0), 0.5, -0.5, 1.0, 1.0))
    step("view_box", lambda v: v.set_view_box(-10.0, 100.0, -125.0, 5.0))
    step("colour_map", lambda v: v.set_color_map(get_colormap("hot", "ms"), "T1 map"))
    move("overlays_over_colour_map")
    move("overlays_over_colour_map_again")
    step("grey_again", lambda v: v.set_color_map(None))
    move("overlays_after_grey")
    move("overlays_after_grey_again")  # reused: layer 0 was skipped by the frame before the next one
    # a render nobody announced (VTK's or Qt's own) after a change draws the image layer and keeps nothing
    step("unprepared_render", lambda v: v.set_window_level(150.0, 40.0), vp.GetRenderWindow().Render)
    move("overlays_after_unprepared")
    move("overlays_after_unprepared_again")
    move("overlays_after_unprepared_thrice")
    step("no_image", lambda v: v.set_image(None))
    step("placeholder_text", lambda v: v.set_placeholder("Nothing acquired"))
    move("overlays_over_placeholder")
    move("overlays_over_placeholder_again")
    (out / "steps.json").write_text(json.dumps(steps, indent=1))
    capture.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
