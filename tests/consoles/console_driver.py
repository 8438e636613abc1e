"""Drives one console on a real X display like an agent, for the display tests of the consoles' views.

`Driver` finds named targets in the console's geometry export, sends X input (runner.xinput), lets the
console settle and takes screenshots (runner.capture). `run_script` launches a console (or resets one
in place), homes the pointer and runs a script of actions on a Driver; `fresh_twice_and_reset` runs a
script on two fresh launches and once more on the second console reset in place, for tests that need
byte-identical screenshots across the three.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from runner.actions import Action
from runner.capture import ScreenCapture, encode_png
from runner.console_process import ConsoleProcess
from runner.xinput import open_input
from tests.conftest import require_console

ROOT = Path(__file__).resolve().parents[2]
SCREEN = (1280, 800)  # the display fixture's size
HOME = (1270, 790)  # the pointer's place at an episode start: off every button (no hover)
SUBJECT = "dev"


def on_screen(rect: list[int]) -> bool:
    """Whether an exported rect (x, y, w, h) is non-empty and wholly on the screen."""
    x, y, w, h = rect
    return w > 0 and h > 0 and x >= 0 and y >= 0 and x + w <= SCREEN[0] and y + h <= SCREEN[1]


def to_screen(t: dict[str, float], u: float, v: float) -> tuple[int, int]:
    """Screen pixel of the point (u, v) through an exported transform (ax, bx, ay, by)."""
    return int(round(t["ax"] * u + t["bx"])), int(round(t["ay"] * v + t["by"]))


def comparable(state: dict) -> dict:
    """A state dump without what differs between equal episodes (the console's start time)."""
    state = dict(state)
    state["provenance"] = {k: v for k, v in state["provenance"].items() if k != "console_start"}
    return state


def write_card(folder: Path, card_id: str, modality: str, title: str, goal: str,
               initial_state: dict | None = None) -> str:
    """A task card (the CT smoke card's fields) with its own initial state and no oracle; its task.json path."""
    base = json.loads((ROOT / "tasks/ct/ct_ui_smoke_routine/task.json").read_text())
    base.update(id=card_id, modality=modality, title=title, goal=goal, initial_state=initial_state or {},
                perturbations={}, oracle="none", workflow_stages=[])
    d = folder / card_id
    d.mkdir(parents=True, exist_ok=True)
    (d / "task.json").write_text(json.dumps(base))
    return str(d / "task.json")


class Driver:
    """Acts on one console like an agent: named targets from the geometry export, X input, settles.

    Screenshots taken with `shot` are kept in `shots`, the facts a test checks in `facts`."""

    def __init__(self, con: ConsoleProcess, inp, cap: ScreenCapture) -> None:
        self.con, self.inp, self.cap = con, inp, cap
        self.shots: dict[str, bytes] = {}
        self.facts: dict[str, object] = {}

    # ---- the geometry export --------------------------------------------------------------
    def geometry(self) -> dict:
        """The whole export: named rects, viewports, transforms."""
        return self.con.geometry()

    def geo(self) -> dict[str, list[int]]:
        """The named rects (x, y, w, h)."""
        return self.geometry()["geometry"]

    def centre(self, name: str) -> tuple[int, int]:
        """The centre pixel of a named rect."""
        x, y, w, h = self.geo()[name]
        return x + w // 2, y + h // 2

    def handle(self, vp: int, name: str) -> tuple[int, int]:
        """The centre pixel of a planning grip on viewport `vp`."""
        return self.centre(f"viewport{vp}.handle:{name}")

    def transform(self, vp: int) -> dict[str, float]:
        """Viewport `vp`'s plane-mm to screen transform."""
        return self.geometry()["transforms"][f"viewport{vp}"]

    def image_point(self, x_mm: float, y_mm: float) -> tuple[int, int]:
        """Screen pixel of ultrasound image mm (x right of the centre line, y depth) through the exported transform."""
        return to_screen(self.geometry()["transforms"]["us_image"], x_mm, -y_mm)

    def missing(self, names: Iterable[str]) -> list[str]:
        """Which of these names are not exported with an on-screen rect."""
        g = self.geo()
        return [n for n in names if n not in g or not on_screen(g[n])]

    def params(self) -> dict:
        """The open MR queue row's parameters."""
        st = self.con.state()
        return next(r for r in st["queue"] if r["uid"] == st["open_row"])["params"]

    # ---- input ------------------------------------------------------------------------------
    def home(self) -> None:
        """Episode start: focus on the console window, the pointer off every button, one settle."""
        self.inp.home(self.con.hello["window_id"], HOME)
        self.con.settle(0.0)

    def act(self, action: Action, advance: float = 0.5) -> None:
        """One action, then the console settles `advance` simulated seconds."""
        self.inp.perform(action)
        self.con.settle(advance)

    def click(self, name: str, button: str = "left") -> None:
        """Click the centre of a named rect."""
        x, y = self.centre(name)
        self.act(Action("click", x=x, y=y, button=button))

    def click_at(self, xy: tuple[int, int]) -> None:
        """Left click at a screen pixel."""
        self.act(Action("click", x=xy[0], y=xy[1]))

    def double_click(self, name: str) -> None:
        """Double click the centre of a named rect."""
        x, y = self.centre(name)
        self.act(Action("double_click", x=x, y=y))

    def drag(self, src: str, dst: str) -> None:
        """Drag from one named rect's centre to another's (1 s settle)."""
        (x, y), (x2, y2) = self.centre(src), self.centre(dst)
        self.act(Action("drag", x=x, y=y, x2=x2, y2=y2), 1.0)

    def drag_handle(self, vp: int, name: str, du_mm: float, dv_mm: float) -> None:
        """Drag a grip by (du, dv) plane mm of the viewport (pixels from its exported transform)."""
        t = self.transform(vp)
        x, y = self.handle(vp, name)
        self.act(Action("drag", x=x, y=y, x2=int(round(x + t["ax"] * du_mm)), y2=int(round(y + t["ay"] * dv_mm))),
                 0.5)

    def type_into(self, name: str, text: str) -> None:
        """Click a field, select all, type `text` and press Enter."""
        self.click(name)
        self.act(Action("key", key="ctrl+a"))
        self.act(Action("type", text=text))
        self.act(Action("key", key="Enter"))

    # ---- screenshots --------------------------------------------------------------------------
    def grab(self) -> bytes:
        """The screen as PNG bytes."""
        return encode_png(self.cap.grab_rgb())

    def shot(self, name: str) -> bytes:
        """A screenshot kept as `shots[name]`."""
        self.shots[name] = self.grab()
        return self.shots[name]


@contextmanager
def driving(display, con: ConsoleProcess) -> Iterator[Driver]:
    """A Driver on a running console, with X input and capture open for the block and closed after it."""
    inp, cap = open_input(display.name), ScreenCapture(display.name)
    try:
        yield Driver(con, inp, cap)
    finally:
        inp.close()
        cap.close()


def run_script(display, modality: str, card: str, script: Callable[[Driver], None],
               con: ConsoleProcess | None = None, seed: int = 0, subject: str = SUBJECT) -> tuple[Driver, ConsoleProcess]:
    """Launch a console on `card` and `subject` (or reset `con` in place to them), home the pointer and run `script`.

    The console keeps running (the caller stops it); one launched here is stopped if the script fails."""
    launched = con is None
    if con is None:
        con = ConsoleProcess(display, modality, card, subject, seed)
        con.start()
    else:
        con.reset(card, subject, seed)
    try:
        with driving(display, con) as d:
            d.home()
            script(d)
    except BaseException:
        if launched:
            con.stop()
        raise
    return d, con


def probe_once(display, folder: Path, card_id: str, title: str, goal: str, initial_state: dict,
               script: Callable[[Driver], None], modality: str = "mr") -> Driver:
    """A display test module's one probe run: a card of its own in `folder`, `script` played on a fresh console,
    the console stopped and every screenshot written to `folder` as `<name>.png` (for a person to look at)."""
    card = write_card(folder, card_id, modality, title, goal, initial_state)
    d, con = run_script(display, modality, card, script)
    con.stop()
    for name, png in d.shots.items():
        (folder / f"{name}.png").write_bytes(png)
    return d


def fresh_twice_and_reset(display, modality: str, card: str, script: Callable[[Driver], None], shots: Path,
                          prefix: str = "") -> tuple[Driver, Driver, Driver]:
    """The script on two fresh launches and once more on the second console reset in place.

    The first run's screenshots are written to `shots` as `<prefix><name>.png`, and where the reset run's
    differ, those as `<prefix>reset_<name>.png` (for a person to look at)."""
    require_console()
    first, con = run_script(display, modality, card, script)
    con.stop()
    second, con = run_script(display, modality, card, script)
    try:
        reset, _ = run_script(display, modality, card, script, con)  # the same console, reset in place
    finally:
        con.stop()
    shots.mkdir(parents=True, exist_ok=True)
    for name, png in first.shots.items():
        (shots / f"{prefix}{name}.png").write_bytes(png)
        if reset.shots.get(name) != png:  # to look at what a reset left behind
            (shots / f"{prefix}reset_{name}.png").write_bytes(reset.shots.get(name, b""))
    return first, second, reset


def assert_same_screenshots(first: Driver, second: Driver, reset: Driver) -> None:
    """The three runs took the same screenshots, byte for byte (messages say where: this module's
    asserts are not rewritten by pytest)."""
    names = [list(r.shots) for r in (first, second, reset)]
    assert names[0] == names[1] == names[2], f"the runs took different screenshots: {names}"
    differ = [n for n in first.shots if first.shots[n] != second.shots[n]]
    assert differ == [], f"two fresh runs differ at {differ}"
    differ = [n for n in first.shots if first.shots[n] != reset.shots[n]]
    assert differ == [], f"a console reset in place differs from a fresh one at {differ}"
