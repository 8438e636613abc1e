"""The CT planning page with both scouts acquired, captured from the screen as an agent sees it (issue 24).

    python -m tests.consoles.ct_scout_probe --out DIR [--task ct_lung_coverage_isocenter] [--subject dev] [--protocol ID]

Builds the CT console as `python -m consoles.ct` does, loads the card's protocol (or the first one), acquires
the scouts and writes DIR/screen.png (the whole window), one crop per ruler label of each scout
(DIR/<viewport>_<label>.png, the label's box from the viewport, padded) and DIR/manifest.json:
[{"file", "widget", "kind": "text", "expected": [words]}] plus {"kind": "screen"} for the whole capture.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

RULER_PREFIXES = ("zruler", "hruler")  # consoles.ct.graphics: table z on both scouts, table height on the lateral
PAD_PX = 4


def probe(out: Path, task: str, subject: str, protocol: str | None = None) -> list[dict]:
    from PIL import Image
    from PySide6 import QtWidgets

    from runner.capture import ScreenCapture
    from tests.consoles.legibility_probe import _settle, actor_text, show_console
    from tasks.card import load_card

    app = QtWidgets.QApplication.instance()
    view = show_console(load_card(task), subject)
    m = view.model
    if protocol is not None or m.protocol is None:
        view._do(m.load_protocol, protocol or m.selected_protocol or m.protocols()[0].id)
    view._do(m.acquire_scout)
    view.on_clock(m.t, m.t + 10.0)
    _settle(app)
    for vp in view.viewports():
        if vp.isVisible():
            vp.render_now()
            vp.sync_display()
    _settle(app)
    cap = ScreenCapture(os.environ["DISPLAY"])
    try:
        shot = cap.grab_rgb()
    finally:
        cap.close()
    Image.fromarray(shot).save(out / "screen.png")
    manifest: list[dict] = [{"file": "screen.png", "widget": "screen", "kind": "screen", "expected": []}]
    for vp in (view.scout_ap, view.scout_lat):
        for label, (x, y, w, h) in vp.label_rects().items():
            if not label.startswith(RULER_PREFIXES):
                continue
            name = f"{vp.name}_{label}.png"
            Image.fromarray(shot[max(0, y - PAD_PX):y + h + PAD_PX, max(0, x - PAD_PX):x + w + PAD_PX]).save(out / name)
            manifest.append({"file": name, "widget": f"{vp.name}.label:{label}", "kind": "text",
                             "expected": [actor_text(vp, label)], "rect": [x, y, w, h]})
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.consoles.ct_scout_probe")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--task", default="ct_lung_coverage_isocenter")
    ap.add_argument("--subject", default="dev")
    ap.add_argument("--protocol", default=None, help="the CT protocol to load (default: the card's, else the first)")
    args = ap.parse_args(argv)
    from consoles.common.determinism import apply_environment, configure_application

    apply_environment()
    from PySide6 import QtWidgets

    app = QtWidgets.QApplication(["ct_scout_probe"])
    configure_application(app, benchmark_mode=True)
    args.out.mkdir(parents=True, exist_ok=True)
    manifest = probe(args.out, args.task, args.subject, args.protocol)
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
