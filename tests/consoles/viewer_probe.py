"""Renders the plane-aware viewer (layout, resliced image, colour map, every overlay kind) for the
display tests. Run under Xvfb as its own process (the test process never creates a QApplication):

    python -m tests.consoles.viewer_probe --out DIR

Writes DIR/<step>.png (the whole screen, captured like an agent's screenshot) and
DIR/manifest.json: per step the layout state dump and every shown viewport's geometry export
and label rectangles, plus what the test needs to know about the scene.
"""
from __future__ import annotations

import json

import numpy as np

from tests.consoles.probe_process import start_probe


def _settle(app, layout) -> None:
    from PySide6 import QtCore, QtGui

    for _ in range(3):
        app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents)
        QtCore.QCoreApplication.sendPostedEvents()
    for vp in layout.visible_viewports():
        vp.render_now()
        vp.sync_display()
    QtGui.QGuiApplication.sync()


def marker_volume() -> tuple[np.ndarray, tuple, tuple]:
    """vol[z, y, x] of 2 mm voxels: background 10, a 'left' block (x > 20 mm) of 100."""
    vol = np.full((61, 61, 61), 10.0, np.float32)
    vol[:, :, 41:] = 100.0  # x = -60 + 2 i > 20 mm
    return vol, (-60.0, -60.0, -60.0), (2.0, 2.0, 2.0)


def main(argv: list[str] | None = None) -> int:
    out, app, window = start_probe("viewer_probe", argv, 1280, 800)
    import os

    from PySide6 import QtWidgets

    from consoles.common import overlays as ov
    from consoles.common.colormaps import get_colormap
    from consoles.common.layout import ViewportLayout
    from rendering.geometry import PlanePose, ResliceGrid, reslice
    from runner.capture import ScreenCapture, encode_png

    lay = QtWidgets.QVBoxLayout(window)
    lay.setContentsMargins(0, 0, 0, 0)
    layout = ViewportLayout(window, "vp")
    lay.addWidget(layout)
    window.show()
    for vp in layout.viewports():
        vp.Initialize()
    _settle(app, layout)

    # viewport 1: an oblique reslice in a plane, with every overlay kind
    vol, origin, spacing = marker_volume()
    pose = PlanePose.axial((0.0, 0.0, 0.0))
    grid = ResliceGrid.centred(pose, 100.0, 1.0)
    vp1 = layout.viewport(0)
    vp1.set_view_box(-60.0, 60.0, -60.0, 60.0)
    vp1.set_resliced(reslice(vol, origin, spacing, grid, order=0), grid)
    layout.set_window_level(0, 200.0, 100.0)
    o = ov.OverlaySet()
    box = ov.RotatedBox("shim", -20.0, 0.0, 15.0, 8.0, 30.0, ov.CYAN)
    o.add(box, ov.Movable())
    for h in box.handles(px_per_mm=vp1.pixels_per_mm()):
        o.add(h)
    o.add(ov.Circle("roi", 30.0, -30.0, 6.0, ov.GREEN))
    o.add(ov.Polyline("path", ((-50.0, -50.0), (-40.0, -30.0), (-30.0, -50.0)), ov.ORANGE))
    o.add(ov.Caliper("len", -40.0, 40.0, 0.0, 40.0, ov.YELLOW))
    o.add(ov.Text("note", 8, 8, "Probe viewport", ov.WHITE, 13, "left", True, valign="top"))
    vp1.set_overlays(o)
    layout.state.assign(0, "reslice_axial")
    # viewport 2: three constant blocks under the "hot" map: black, red, white at W/L 100/50
    vp2 = layout.viewport(1)
    img = np.zeros((60, 90), np.float32)
    img[:, 30:60] = 37.5
    img[:, 60:] = 100.0
    vp2.set_view_box(0.0, 90.0, -60.0, 0.0)
    vp2.set_image(img, 0.5, -0.5, 1.0, 1.0)
    vp2.set_color_map(get_colormap("hot", "ms"), "T1 map")
    layout.set_window_level(1, 100.0, 50.0)
    layout.state.assign(1, "t1map")
    layout.activate(1)
    steps = []
    capture = ScreenCapture(os.environ["DISPLAY"])

    def snap(name: str, extra: dict | None = None) -> None:
        _settle(app, layout)
        (out / f"{name}.png").write_bytes(encode_png(capture.grab_rgb()))
        steps.append({"name": name, "state": layout.state.to_dict(),
                      "viewports": {vp.name: dict(vp.export_geometry(), labels=vp.label_rects())
                                    for vp in layout.visible_viewports()},
                      "frames": {f"vp{i + 1}": [f.mapToGlobal(f.rect().topLeft()).x(),
                                                f.mapToGlobal(f.rect().topLeft()).y(), f.width(), f.height()]
                                 for i, f in enumerate(layout._frames) if f.isVisible()},
                      **(extra or {})})

    snap("quad", {"circle": [30.0, -30.0, 6.0], "caliper_text": "40.0 mm",
                  "blocks": {"black": [15.0, -30.0], "red": [45.0, -30.0], "white": [75.0, -30.0]},
                  "left_block_value_at": [40.0, 0.0], "box_corners": [list(c) for c in box.corners()]})
    layout.set_layout("1x1")
    snap("single")
    layout.set_layout("2x2")
    vp2.set_color_map(None)
    snap("quad_grey")
    (out / "manifest.json").write_text(json.dumps(steps, indent=1))
    capture.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
