"""The one step engine: start a console on a card, then parse -> inject -> settle -> receipt per step.

`run_episode` (runner/episode.py) and the gymnasium env (runner/env.py) both drive episodes through
`StepEngine`, so their receipts are made in one place and cannot drift apart. What differs between them
(who produces the action text, where screenshots go, how faults end the episode) stays with the caller.

The engine writes the exact validated card it was given to `card_path` and hands that file to the
console, so a card loaded from another folder or edited in memory is the card the console runs.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from runner.actions import ParseResult, ParserState, nominal_duration, parse_action
from runner.capture import ScreenCapture
from runner.console_process import ConsoleKeeper, ConsoleProcess
from runner.display import VirtualDisplay
from runner.xinput import open_input
from tasks.card import TaskCard, write_card

POINTER_HOME = (4, 4)  # where the pointer starts every episode (top-left corner, over no control)
RECEIPT_KEYS = ("step", "sim_time", "raw", "action", "repairs", "status", "feedback", "screenshot")


def screenshot_name(step: int) -> str:
    """The file name of the screen the agent saw before step `step` (step_000.png, ...)."""
    return f"step_{step:03d}.png"


def make_receipt(step: int, sim_time: float, raw: Any, action: dict[str, Any] | None, repairs, status: str,
                 feedback: str, model_call: dict[str, Any] | None = None) -> dict[str, Any]:
    """One receipts.jsonl line; `model_call` (the agent's last model call, if any) is added when given."""
    r = {"step": step, "sim_time": sim_time, "raw": raw, "action": action, "repairs": list(repairs),
         "status": status, "feedback": feedback, "screenshot": screenshot_name(step)}
    if model_call:
        r["model_call"] = dict(model_call)
    return r


@dataclass
class StepResult:
    """What one step did: its receipt and the parse result behind it."""

    receipt: dict[str, Any]
    parsed: ParseResult

    @property
    def executed(self) -> bool:
        return self.receipt["status"] == "executed"

    @property
    def done(self) -> bool:
        """The agent said `done` (and it was accepted): the episode ends."""
        return self.parsed.ok and self.parsed.action.type == "done"


class StepEngine:
    """One live episode on one display: the console process, X input, screen capture, sim clock."""

    def __init__(self, card: TaskCard, subject: str, seed: int, display: VirtualDisplay, card_path: Path, *,
                 coord_scale: str = "pixels", log_path: Path | None = None,
                 console_env: dict[str, str] | None = None, control_timeout_s: float | None = None,
                 keeper: ConsoleKeeper | None = None) -> None:
        """With a `keeper` (one per worker) the console may be the previous episode's, reset in place;
        without one the engine launches its own console and stops it on close."""
        self.card = write_card(card, card_path)  # validated; what the console will read
        self.subject, self.seed, self.display = subject, seed, display
        self.coord_scale = coord_scale
        self.screen = (self.card.observation.width, self.card.observation.height)
        self.keeper = keeper
        self._console_args = dict(log_path=log_path, extra_env=console_env, timeout_s=control_timeout_s)
        self._card_path = str(card_path)
        self.console: ConsoleProcess | None = None
        if keeper is None:
            self.console = ConsoleProcess(display, self.card.modality, self._card_path, subject, seed,
                                          **self._console_args)
        self.sim_time = 0.0
        self._inp = self._cap = None
        self._parser = ParserState(pointer=POINTER_HOME)

    def start(self) -> float:
        """Launch (or reset in place) the console, open input and capture, home the pointer, settle;
        returns the sim time."""
        try:
            if self.keeper is not None:
                self.console = self.keeper.acquire(self.display, self.card.modality, self._card_path, self.subject,
                                                   self.seed, **self._console_args)
            else:
                self.console.start()
            self._inp = open_input(self.display.name)
            self._cap = ScreenCapture(self.display.name)
            self._inp.home(self.console.hello["window_id"], POINTER_HOME)
            self.sim_time = self.console.settle(0.0)
        except BaseException:
            self.close()
            raise
        return self.sim_time

    def observe(self) -> np.ndarray:
        """The screen now, a new (H, W, 3) uint8 array."""
        return self._cap.grab_rgb()

    def step(self, step: int, raw: Any, model_call: dict[str, Any] | None = None,
             parse: Callable[..., ParseResult] | None = None) -> StepResult:
        """Parse `raw`, inject it, let the console settle for its nominal duration; returns the receipt.

        A malformed or disallowed action is rejected (no input, no clock advance) with feedback; a display-only
        step (ParseResult.display) is executed the same way, without input or clock advance. Console
        faults (ConsoleFault) propagate: the caller decides how the episode ends. `parse` (an agent
        adapter's reader of its model's native format, same signature as parse_action) replaces
        parse_action.
        """
        res = (parse or parse_action)(raw, self.card.action_profile, self.screen, coord_scale=self.coord_scale,
                                      state=self._parser)
        if res.ok:
            a = res.action
            if a.type != "done":
                self._inp.perform(a)
                self._parser.observe(a)
            self.sim_time = self.console.settle(nominal_duration(a))
            status, feedback = "executed", "done: episode ends" if a.type == "done" else "executed"
        elif res.display is not None and res.error is None:
            status, feedback = "executed", res.display  # display only: no input, the clock stands
        else:
            status, feedback = "rejected", res.error or "rejected"
        action = res.action.to_dict() if res.ok else None
        receipt = make_receipt(step, self.sim_time, raw, action, res.repairs, status, feedback, model_call)
        return StepResult(receipt, res)

    def state(self) -> dict[str, Any]:
        """The console's state dump."""
        return self.console.state()

    def close(self, clean: bool = False) -> None:
        """Close capture and input; stop the console, or hand it back to the keeper for the next
        episode when this one ended `clean` (no fault, state dumped). Safe to call more than once."""
        for closer in (self._cap, self._inp):
            try:
                if closer is not None:
                    closer.close()
            except Exception:  # noqa: BLE001 - teardown goes on whatever one part says
                pass
        self._cap = self._inp = None
        con, self.console = self.console, None
        if con is None:
            return
        if self.keeper is not None:
            self.keeper.release(con, clean)
        else:
            con.stop()
