"""Renders every value widget of a console at its range ends and a typical value, for OCR.

Run under Xvfb as its own process (the test suite's process never creates a QApplication):

    python -m tests.consoles.legibility_probe --modality ct --out DIR [--legacy-spinbox] [--card task.json]

Builds the console exactly as `python -m consoles.<modality>` does (same style, palette, pinned
font), shows it, and for each NumberField sets the minimum, the maximum and the model's own value,
enabled and disabled, grabbing the field each time. Named read-out labels are grabbed as they are.
Writes DIR/*.png and DIR/manifest.json: [{"file", "widget", "kind", "expected"}].
MR also acquires a T1 map with an ROI into viewport 4 (colour bar labels, ROI read-out), puts a double-oblique row on the scanner (the header's status counts down) and grabs every
exam-queue row, the orientation read-out, the viewports' caption lines and plan info (kind "text": the words must read back, spaces aside); viewport
text is drawn by VTK, so those crops come from a screen capture, as an agent sees them.
`--legacy-spinbox` renders the field the console used before (QDoubleSpinBox without buttons
under the old style sheet) instead: the negative control the OCR test must reject.
"""
from __future__ import annotations

import argparse
import importlib
import math
import json
import re
from pathlib import Path

# The style sheet rule and field set-up the consoles shipped with before the fix (commit 2226518).
LEGACY_STYLESHEET = ("QDoubleSpinBox, QSpinBox, QLineEdit { background: #1c1f24; border: 1px solid #6b7380; "
                     "padding: 2px 4px; }\nQDoubleSpinBox:disabled { color: #7a808a; }")
READOUT_LABELS = ("clock", "scanner_status", "dose_readout", "length_readout", "exam_time", "heart_rate", "scan_time",
                  "frame_rate", "image_info", "caliper_readout", "frequency_readout", "orientation_readout",
                  "roi_readout", "viewer_legend")


def _plain(text: str) -> str:
    """A rich-text label's words as shown: line breaks kept, tags dropped, non-breaking spaces as spaces."""
    return re.sub(r"<[^>]+>", "", re.sub(r"<br\s*/?>", "\n", text)).replace("&nbsp;", " ")


def _show_page_of(widget) -> None:
    """Make every stacked page on the way up to the window the current one (only the current
    page of a QStackedWidget is laid out)."""
    from PySide6 import QtWidgets

    child, parent = widget, widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QtWidgets.QStackedWidget):
            parent.setCurrentWidget(child)
        child, parent = parent, parent.parentWidget()


def _settle(app) -> None:
    from PySide6 import QtCore

    for _ in range(3):
        app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents)
        QtCore.QCoreApplication.sendPostedEvents()


def _mr_busy_state(view, app) -> None:
    """MR at its densest: localizer acquired (captions on three viewports), a cine row open and running
    (status counting down, parameters of a real row in the card)."""
    m = view.model
    m.go()
    view.on_clock(0.0, 40.0)  # the 3-plane localizer takes 0:35 (11 slices per plane)
    # a T1 map in viewport 4 with an ROI: its colour bar's labels and the ROI read-out are read back
    view._do(m.open, m.add_protocol("t1_map_molli"))
    view._do(m.go)
    view.on_clock(40.0, 60.0)
    view._do(m.load_series, 3, m.series[-1].uid, 0)
    view._do(m.measure_roi, 3, (-10.0, 30.0), (15.0, 12.0))
    m.open(m.rows[2].uid)
    # the widest geometry a plan shows: a double oblique with both tilts negative, the in-plane
    # rotation three digits and negative (orientation read-out, fields, plan info on the images)
    for name, value in (("main", "T"), ("tilt_a_deg", -23.4), ("tilt_b_deg", -12.1), ("inplane_deg", -150.5),
                        ("pos_lr_mm", -123.4), ("n_slices", 12)):
        m.set_param(name, value)
    m.go()
    view.on_clock(60.0, 65.0)
    _settle(app)


def probe_mr_screen(view, out: Path) -> list[dict]:
    """Queue rows (widget grabs) and viewport caption lines (screen crops) as kind "text"."""
    manifest: list[dict] = []
    m, q = view.model, view.queue
    for r, row in enumerate(m.rows):
        for c in range(q.columnCount()):  # cell by cell: a status icon next to a word is not text
            name = f"queue_row_{row.uid}_{c}.png"
            q.viewport().grab(q.visualRect(q.model().index(r, c))).save(str(out / name))
            manifest.append({"file": name, "widget": f"queue_row:{row.uid}", "kind": "text",
                             "expected": [q.item(r, c).text()]})
    def wanted(vp, label: str):
        if label.startswith("plan_info") or label == "roi_readout":  # plan over the images, ROI on a map
            return [actor_text(vp, label)]
        if label.startswith("colorbar."):  # a map's colour bar: range ends in ms and its title
            return [vp._color_bar_texts[label].GetInput()]
        if not label.startswith("caption") or label == "caption2":  # one-letter orientation: too short
            return None
        return [m.viewport_caption(int(vp.name[-1]) - 1)[int(label[-1])]]

    manifest += _screen_crops(view, out, wanted, pad=0)
    return manifest


def _us_busy_state(view, app) -> None:
    """US at its densest: a right-kidney long axis with the renal preset and a TGC pot pulled, frozen, a
    caliper across the kidney and an annotation (depth scale, read-outs and image text all on show)."""
    m = view.model
    view._do(lambda: m.set_pose(z_mm=-295.0, azimuth_deg=-85.0, rotation_deg=5.0, tilt_deg=-15.0))
    view._do(m.set_preset, "Renal")
    view._do(m.set_param, "tgc_6", -12.0)
    view._do(m.freeze)
    view._do(m.caliper_point, -25.0, 55.0)
    view._do(m.caliper_point, 25.0, 85.0)
    view._do(m.add_annotation, "RT KIDNEY LONG")
    _settle(app)


def _screen_crops(view, out: Path, wanted, pad: int = 4) -> list[dict]:
    """Viewport labels cropped from a screen capture (VTK draws them), kind "text": for each visible
    viewport, `wanted(viewport, label name)` gives the words expected there (None: skip the label)."""
    import os

    from PIL import Image

    from runner.capture import ScreenCapture

    for vp in view.viewports():
        if vp.isVisible():
            vp.render_now()
            vp.sync_display()
    cap = ScreenCapture(os.environ["DISPLAY"])
    try:
        shot = cap.grab_rgb()
    finally:
        cap.close()
    manifest: list[dict] = []
    for vp in view.viewports():
        if not vp.isVisible():
            continue
        for label, (x, y, w, h) in vp.label_rects().items():
            words = wanted(vp, label)
            if words is None:
                continue
            # pad: the glyphs touch a label's box; a little of the dark image around helps the reader
            name = f"{vp.name}_{label}.png"
            Image.fromarray(shot[max(0, y - pad):y + h + pad, max(0, x - pad):x + w + pad]).save(out / name)
            manifest.append({"file": name, "widget": f"{vp.name}.label:{label}", "kind": "text", "expected": words})
    return manifest


def probe_us_screen(view, out: Path) -> list[dict]:
    """The depth scale's numbers, the caliper's length beside its line and the annotation on the image."""
    m = view.model
    texts = {f"annotation{i + 1}": a.text for i, a in enumerate(m.annotations)}
    # the length, not the index before it ("1: "): the value is what must read back
    texts.update({f"caliper{i + 1}.text": f"{c.length_mm:.1f} mm" for i, c in enumerate(m.calipers)})

    def wanted(vp, label: str):
        if label.startswith("depth_"):
            return [actor_text(vp, label)]
        return [texts[label]] if label in texts else None

    return _screen_crops(view, out, wanted)


def actor_text(vp, label: str) -> str:
    """The text a viewport's overlay label shows (from the overlay set it draws)."""
    for item in vp.overlays.primitives():
        if getattr(item, "name", None) == label and hasattr(item, "text"):
            return item.text
    raise KeyError(label)


def show_console(card, subject: str = "dev"):
    """Build the card's console as `python -m consoles.<modality>` does, show it at the screen's origin with
    its viewports initialised, and let it settle; returns the view."""
    from PySide6 import QtWidgets

    from rendering.subjects import load_runtime

    build = importlib.import_module(f"consoles.{card.modality}.__main__").build
    view = build(card, load_runtime(subject), 0, card.observation.width, card.observation.height)
    window = view.central
    window.move(0, 0)
    window.show()
    for vp in view.viewports():
        vp.Initialize()
    _settle(QtWidgets.QApplication.instance())
    return view


def probe_console(modality: str, out: Path, card_path: Path | None = None) -> list[dict]:
    from PySide6 import QtWidgets

    from consoles.common.numeric import format_number
    from consoles.common.widgets import NO_VALUE_TEXT, NumberField
    from tasks.card import all_cards, load_card_file

    app = QtWidgets.QApplication.instance()
    if card_path is not None:
        card = load_card_file(card_path)
    else:
        # The card that shows the most: a contrast task for CT puts every field on screen.
        cards = [c for c in all_cards() if c.modality == modality]
        card = max(cards, key=lambda c: (c.level, c.id))
    view = show_console(card)
    window = view.central
    if modality == "mr":
        _mr_busy_state(view, app)
    elif modality == "us":
        _us_busy_state(view, app)
    manifest: list[dict] = []
    fields = sorted(window.findChildren(NumberField), key=lambda f: f.objectName())
    if not fields:
        raise SystemExit(f"console {modality} has no NumberField: nothing to probe")
    for f in fields:
        _show_page_of(f)
        was_enabled, held = f.isEnabled(), f.value()
        for tag, value in (("min", f.lo), ("max", f.hi), ("model", held)):
            for enabled in (True, False):
                f.setEnabled(enabled)
                f.setValue(value)
                _settle(app)
                name = f"{f.objectName()}_{tag}_{'on' if enabled else 'off'}.png"
                f.grab().save(str(out / name))
                # the field shows the number only; its unit is the label beside it (issue 24)
                shown = NO_VALUE_TEXT if math.isnan(f.value()) else format_number(f.value(), f.decimals, "")
                manifest.append({"file": name, "widget": f.objectName(), "kind": "field", "expected": shown})
        f.setEnabled(was_enabled)
        f.setValue(held)
    for label in window.findChildren(QtWidgets.QLabel):
        if label.objectName() in READOUT_LABELS and label.text():
            _show_page_of(label)
            _settle(app)
            name = f"{label.objectName()}.png"
            label.grab().save(str(out / name))
            manifest.append({"file": name, "widget": label.objectName(), "kind": "label",
                             "expected": _plain(label.text())})
    if modality == "mr":
        manifest += probe_mr_screen(view, out)
    elif modality == "us":
        manifest += probe_us_screen(view, out)
    return manifest


def probe_legacy(out: Path) -> list[dict]:
    from PySide6 import QtWidgets

    window = QtWidgets.QWidget()
    window.setStyleSheet(LEGACY_STYLESHEET)
    lay = QtWidgets.QVBoxLayout(window)
    manifest = []
    for name, lo, hi, dec, suffix in (("kv", 70, 150, 0, " kV"), ("start", -2000, 2000, 1, " mm")):
        f = QtWidgets.QDoubleSpinBox()
        f.setButtonSymbols(QtWidgets.QAbstractSpinBox.ButtonSymbols.NoButtons)
        f.setRange(lo, hi)
        f.setDecimals(dec)
        f.setSuffix(suffix)
        f.setMinimumHeight(28)
        f.setFixedWidth(190)
        f.setObjectName(name)
        lay.addWidget(f)
    window.show()
    for f in window.findChildren(QtWidgets.QDoubleSpinBox):
        for value in (f.minimum(), f.maximum()):
            f.setValue(value)
            _settle(QtWidgets.QApplication.instance())
            file = f"legacy_{f.objectName()}_{value:g}.png"
            f.grab().save(str(out / file))
            manifest.append({"file": file, "widget": f.objectName(), "kind": "field", "expected": f.text()})
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.consoles.legibility_probe")
    ap.add_argument("--modality", default="ct")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--legacy-spinbox", action="store_true")
    ap.add_argument("--card", type=Path, default=None, help="a task.json to build the console for")
    args = ap.parse_args(argv)
    from consoles.common.determinism import apply_environment, configure_application

    apply_environment()
    from PySide6 import QtWidgets

    app = QtWidgets.QApplication(["legibility_probe"])
    configure_application(app, benchmark_mode=True)
    args.out.mkdir(parents=True, exist_ok=True)
    manifest = probe_legacy(args.out) if args.legacy_spinbox else probe_console(args.modality, args.out, args.card)
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
