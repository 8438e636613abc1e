"""Drives the MR console through layout changes, series loads and planning-grip drags, and checks
that every frame shows what is there, for the no-stale-pixels display test (issue 24). Run under
Xvfb as its own process (the test process never creates a QApplication):

    python -m tests.consoles.layout_change_probe --out DIR [--subject s06] [--script NAME] [--part ...]
    python -m tests.consoles.layout_change_probe --serve [--subject s06]

With --serve it runs jobs read from stdin, one JSON line each ({"out", "script", "part", "half"}, as the
options), and answers each with a line `LAYOUT-PROBE {"ok": true}` (or `{"error": traceback}`): the
imports, the subject and each script's sequence are then paid once for every comparison the tests ask of it.

The console runs in this process (the shell's own settle, real X input through runner.xinput), so a
probe can look behind a frame without changing what the next frame does:

- "sequence": the script as an agent runs it; after every step the viewer area is grabbed.
- "checked": the same script on a second console; after every step's grab each shown viewport is
  drawn once more with everything drawn (its image layer cache bypassed and its state put back, so
  the next step renders as in "sequence") and the viewer area is grabbed again.
- "fresh": for every step, a console built afresh around a copy of the sequence's model at that
  step (no history of layouts, sizes or frames) is shown and grabbed.

DIR/steps.json: per step its name and the digests of the sequence frame, the checked frame, its
full redraw and the fresh console's frame; frames that differ are written as PNGs beside it.
"""
from __future__ import annotations

import argparse
import copy
import hashlib
import json
import sys
import traceback
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
CARD = ROOT / "tasks/mr/L4_4ch/task.json"
# Two tours from the card's 2x2 layout, each short enough for one test's time limit on a loaded machine;
# together they make every layout change in every order (tests/consoles/test_layout_change.py checks both).
TOURS = {"tour_a": ["1x2", "2x2", "1x1", "2x2"], "tour_b": ["1x2", "1x1", "1x2"]}
START_LAYOUT = "2x2"


def layout_changes(tour: list[str]) -> set[tuple[str, str]]:
    """The (from, to) layout changes a tour makes, from the card's start layout."""
    path = [START_LAYOUT, *tour]
    return {(a, b) for a, b in zip(path, path[1:]) if a != b}


def _script(name: str) -> list[tuple[str, Callable]]:
    """(step name, action on a Driver) of a named script."""
    def layout(n: str):
        return lambda d: d.click(f"layout_{n}")

    def load(series: str, vp: int):
        return lambda d: d.drag(f"series_item:{series}", f"viewport{vp}")

    def grip(vp: int, handle: str, du: float, dv: float):
        return lambda d: d.drag_handle(vp, handle, du, dv)

    if name == "issue24":  # the sequence: 2ch into 1x1, drag its grips, 2x2
        return [("1x1", layout("1x1")), ("load_2ch_vp1", load("2", 1)), ("move_grip", grip(1, "centre", 8.0, 6.0)),
                ("rotate_grip", grip(1, "rotate", 15.0, -10.0)), ("2x2", layout("2x2"))]
    if name in TOURS:  # layout changes, with loads into viewports of each size and a grip drag
        steps: list[tuple[str, Callable]] = []
        for k, n in enumerate(TOURS[name]):
            steps.append((f"{k}_{n}", layout(n)))
            if n == "1x1":
                steps.append((f"{k}_load_2ch_vp1", load("2", 1)))
            if name == "tour_a" and n == "2x2" and k == 3:
                steps.append((f"{k}_load_tra_vp4", load("1.3", 4)))
            if name == "tour_b" and n == "1x2" and k == 2:
                steps.append((f"{k}_load_2ch_vp2", load("2", 2)))
                steps.append((f"{k}_move_grip_vp2", grip(2, "centre", 6.0, -4.0)))
        return steps
    raise SystemExit(f"unknown script {name!r}")


class _InProcess:
    """The parts of runner.console_process.ConsoleProcess a tests.consoles.console_driver.Driver uses,
    answered by a shell in this process."""

    def __init__(self, shell) -> None:
        self.shell = shell
        self.hello = shell.cmd_hello()

    def settle(self, advance: float) -> float:
        return self.shell.cmd_settle(advance)["sim_time"]

    def geometry(self) -> dict:
        return self.shell.cmd_geometry()

    def state(self) -> dict:
        return self.shell.cmd_state()["state"]


REPLY = "LAYOUT-PROBE "  # marks the serve mode's answers among anything Qt or VTK print


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.consoles.layout_change_probe")
    ap.add_argument("--out", type=Path, help="the one job's folder (without --serve)")
    ap.add_argument("--serve", action="store_true", help="run jobs read from stdin, one JSON line each")
    ap.add_argument("--subject", default="s06")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--script", default="issue24")
    # the two comparisons as separate jobs (each test then plays a part of the work): "redraw" plays the script
    # on a second console with full redraws, "fresh" builds a console afresh at every step; both compare with
    # the sequence, played once per script and process
    ap.add_argument("--part", choices=("redraw", "fresh"), default=None, help="one comparison only (default both)")
    ap.add_argument("--half", type=int, choices=(0, 1), default=None,
                    help="with --part fresh: build the fresh consoles of the first (0) or second (1) half of the steps")
    args = ap.parse_args(argv)
    if not args.serve and args.out is None:
        ap.error("--out is required without --serve")
    import os

    from consoles.common.shell import ConsoleShell  # applies the console environment before Qt
    from consoles.common.console_card import load_console_card
    from consoles.mr.__main__ import make_model
    from consoles.mr.view import MRConsoleView
    from PySide6 import QtCore, QtGui
    from rendering.subjects import load_runtime
    from runner.capture import ScreenCapture, encode_png
    from runner.xinput import open_input
    from tests.consoles.console_driver import HOME, Driver

    card = load_console_card(str(CARD), None)
    subject = load_runtime(args.subject)
    shell_args = argparse.Namespace(control="in-process")  # benchmark mode: frames at settle
    display = os.environ["DISPLAY"]
    cap, inp = ScreenCapture(display), open_input(display)

    def launch(model) -> tuple:
        shell = ConsoleShell(shell_args, card.width, card.height)
        view = MRConsoleView(model, card.width, card.height)
        shell.attach(view)
        shell.window.show()
        shell.window.move(0, 0)
        shell.window.activateWindow()
        for vp in view.viewports():
            vp.Initialize()
        con = _InProcess(shell)
        d = Driver(con, inp, cap)
        inp.home(con.hello["window_id"], HOME)
        con.settle(0.0)
        return shell, view, d

    def close(shell) -> None:
        for vp in shell.controller.viewports():
            vp.Finalize()
        shell.window.hide()
        shell.window.deleteLater()
        shell._process_all()
        # deleteLater outside an event loop waits for one: delete now, or every closed console stays alive and
        # each later build (its style set on every widget) gets slower (a served probe builds ~30)
        QtCore.QCoreApplication.sendPostedEvents(None, QtCore.QEvent.Type.DeferredDelete)

    def viewer_rect(view) -> tuple[int, int, int, int]:
        w = view.viewer
        g = w.mapToGlobal(w.rect().topLeft())
        return g.x(), g.y(), w.width(), w.height()

    def grab(view) -> np.ndarray:
        QtGui.QGuiApplication.sync()
        x, y, w, h = viewer_rect(view)
        return np.ascontiguousarray(cap.grab_rgb()[y:y + h, x:x + w])

    def full_redraw(view) -> None:
        """Draw every shown viewport with everything drawn, then put its cache back as it was, so
        the next step renders as if this never happened."""
        for vp in view.viewer.visible_viewports():
            cache = vp._image_layer
            kept = (cache._stored, cache._key, cache._store_next, cache._prepared)
            vp.GetRenderWindow().Render()  # unprepared: layer 0 drawn, nothing stored
            cache._stored, cache._key, cache._store_next, cache._prepared = kept
            vp.sync_display()

    def digest(a: np.ndarray) -> str:
        return hashlib.sha256(a.tobytes()).hexdigest()

    played: dict[str, tuple[list, list]] = {}

    def sequence(name: str) -> tuple[list, list]:
        """The script as an agent's episode runs it: its frames, and the model copied at every step (for
        "fresh"); played once per script in this process (a console of its own, closed after)."""
        if name not in played:
            shell, view, d = launch(make_model(card, subject, args.seed))
            seq, models = [], []
            for _, act in _script(name):
                act(d)
                seq.append(grab(view))
                listeners, view.model.listeners = view.model.listeners, []
                models.append(copy.deepcopy(view.model, {id(subject): subject}))
                view.model.listeners = listeners
            close(shell)
            played[name] = (seq, models)
        return played[name]

    def job(out: Path, name: str, part: str | None, half: int | None) -> None:
        out.mkdir(parents=True, exist_ok=True)
        script = _script(name)
        seq, models = sequence(name)
        layouts = [m.layout.layout for m in models]
        # the same script on a second console, each frame followed by a full redraw
        checked, full = [None] * len(script), [None] * len(script)
        if part in (None, "redraw"):
            shell, view, d = launch(make_model(card, subject, args.seed))
            for k, (_, act) in enumerate(script):
                act(d)
                checked[k] = grab(view)
                full_redraw(view)
                full[k] = grab(view)
            close(shell)
        # a console built afresh around every step's state
        fresh = [None] * len(script)
        if part in (None, "fresh"):
            cut = (len(models) + 1) // 2
            chosen = {None: range(len(models)), 0: range(cut), 1: range(cut, len(models))}[half]
            for k in chosen:
                shell, view, _ = launch(models[k])
                fresh[k] = grab(view)
                close(shell)
        steps = []
        for k, (step, _) in enumerate(script):
            frames = {"sequence": seq[k], "checked": checked[k], "full_redraw": full[k], "fresh": fresh[k]}
            s = {"name": step, "layout": layouts[k], "previous": digest(seq[k - 1]) if k else "",
                 **{what: digest(a) for what, a in frames.items() if a is not None}}
            steps.append(s)
            if len({digest(a) for a in frames.values() if a is not None}) > 1:
                for what, a in frames.items():
                    if a is not None:
                        (out / f"{k:02d}_{step}_{what}.png").write_bytes(encode_png(a))
        (out / "steps.json").write_text(json.dumps(steps, indent=1))

    try:
        if not args.serve:
            job(args.out, args.script, args.part, args.half)
            return 0
        for line in sys.stdin:
            try:
                j = json.loads(line)
                job(Path(j["out"]), j["script"], j.get("part"), j.get("half"))
                reply: dict = {"ok": True}
            except Exception:  # noqa: BLE001 - answered to the test, which fails with it
                reply = {"error": traceback.format_exc(limit=12)}
            print(REPLY + json.dumps(reply), flush=True)
        return 0
    finally:
        cap.close()
        inp.close()


if __name__ == "__main__":
    raise SystemExit(main())
