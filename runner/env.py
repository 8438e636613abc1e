"""A gymnasium environment over one task: you are the agent.

``reset(seed=...)`` launches the console (on a private Xvfb display owned by the env for its
lifetime) and returns the first screenshot as an (H, W, 3) uint8 array. ``step(action_text)``
parses the text exactly like the runner does (project JSON, computer_13 dicts or a pyautogui
call; a rejected action still costs a step), injects it through XTEST, lets the console settle
and returns the next screenshot. ``info["receipt"]`` is the step's receipt (same fields as
receipts.jsonl, made by the same step engine, runner/step.py; `screenshot` names the screen the
step was taken on as the runner would store it: the observation returned just before); when the episode ends (``done`` -> terminated, step budget -> truncated) the
console's state is scored and ``info["verdict"]`` holds the verdict; the reward is its SR then,
0 before. The seed given to reset is the console seed (seed=None draws one from the env's RNG).

Example::

    env = MedImageOSEnv("ct_ui_smoke_routine")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step('{"action": "click", "x": 80, "y": 120}')
    env.close()
"""
from __future__ import annotations

import json
import shutil
import string
import tempfile
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from runner.console_process import ConsoleKeeper, ConsoleProcess
from runner.control_client import ConsoleFault
from runner.display import VirtualDisplay
from runner.episode import CARD_FILE, EpisodeSpec, make_verdict
from runner.step import StepEngine, make_receipt
from tasks.card import TaskCard, load_card

# Printable ASCII without vertical whitespace oddities: what action text is made of.
ACTION_CHARSET = "".join(c for c in string.printable if c not in "\r\x0b\x0c")


class MedImageOSEnv(gym.Env):
    """One task on one subject; the observation is the screen, the action is action text."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 2}

    def __init__(self, task_id: str | TaskCard, subject: str = "dev", *, coord_scale: str = "pixels",
                 max_steps: int | None = None, render_mode: str | None = None,
                 max_action_length: int = 256, agent_name: str = "env",
                 console_env: dict[str, str] | None = None, reuse: bool | None = None) -> None:
        self.card = task_id if isinstance(task_id, TaskCard) else load_card(task_id)
        self.subject = subject
        self.coord_scale = coord_scale
        self.max_steps = int(max_steps or self.card.budgets.max_steps)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None")
        self.render_mode = render_mode
        self.agent_name = agent_name
        self.console_env = console_env
        w, h = self.card.observation.width, self.card.observation.height
        self.screen = (w, h)
        self.observation_space = spaces.Box(0, 255, shape=(h, w, 3), dtype=np.uint8)
        self.action_space = spaces.Text(max_length=max_action_length, min_length=1, charset=ACTION_CHARSET)
        self._display: VirtualDisplay | None = None
        self._engine: StepEngine | None = None
        self._card_dir: Path | None = None
        self._last_obs: np.ndarray | None = None
        self._episode: EpisodeSpec | None = None
        self._over = True
        # reset() resets the console in place after an episode without a fault (reuse=False or
        # MEDIMAGEOS_CONSOLE_REUSE=0: a new console process per reset)
        self._keeper = ConsoleKeeper(reuse)
        self._faulted = False

    # ---- gymnasium API ------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = dict(options or {})
        subject = str(options.get("subject", self.subject))
        episode_seed = int(seed) if seed is not None else int(self.np_random.integers(0, 2**31 - 1))
        self._over = True  # until the new episode has started
        self._stop_console()
        w, h = self.screen
        if self._display is None or not self._display.alive():
            if self._display is not None:
                self._display.stop()
            self._display = VirtualDisplay(w, h).start()
        self._episode = EpisodeSpec(self.card, subject, episode_seed)
        # the console reads the card this env holds, written to a folder the env owns
        self._card_dir = self._card_dir or Path(tempfile.mkdtemp(prefix="medimageos-env-"))
        engine = StepEngine(self.card, subject, episode_seed, self._display, self._card_dir / CARD_FILE,
                            coord_scale=self.coord_scale, console_env=self.console_env, keeper=self._keeper)
        self._faulted = True  # until the console has shown the new episode's first frame
        self._sim_time = engine.start()  # closes what it opened if it fails
        self._faulted = False
        self._engine = engine
        self._steps = self._rejected = 0
        self._wall0 = time.monotonic()
        self._over = False
        obs = self._grab()
        info = {"task": self.card.id, "subject": subject, "seed": episode_seed, "goal": self.card.goal,
                "steps_left": self.max_steps, "sim_time": self._sim_time}
        return obs, info

    def step(self, action: str):
        if self._over or self._engine is None:
            raise RuntimeError("the episode is over (or never started): call reset() first")
        raw = action if isinstance(action, str) else json.dumps(action)
        step = self._steps
        self._steps += 1
        fault = ""
        try:
            result = self._engine.step(step, raw)
            receipt, res = result.receipt, result.parsed
            self._sim_time = self._engine.sim_time
            self._rejected += not result.executed
            obs = self._grab()
        except ConsoleFault as exc:
            fault = f"console fault: {exc}"
            self._faulted = True
            res = None
            receipt = make_receipt(step, self._sim_time, raw, None, [], "rejected", fault)
            obs = self._last_obs.copy() if self._last_obs is not None else self.observation_space.low.copy()
        feedback = receipt["feedback"]
        terminated = bool(res is not None and res.ok and res.action.type == "done" and not fault)
        truncated = bool(not terminated and (fault or self._steps >= self.max_steps))
        info: dict[str, Any] = {"receipt": receipt, "steps_left": self.max_steps - self._steps,
                                "feedback": feedback}
        reward = 0.0
        if terminated or truncated:
            verdict = self._finish("done" if terminated else ("fault" if fault else "budget"), fault)
            info["verdict"] = verdict.model_dump()
            reward = float(verdict.sr)
        return obs, reward, terminated, truncated, info

    def render(self):
        if self.render_mode == "rgb_array" and self._last_obs is not None:
            return self._last_obs.copy()
        return None

    def close(self) -> None:
        self._over = True
        self._stop_console()
        self._keeper.close()
        if self._display is not None:
            self._display.stop()
            self._display = None
        if self._card_dir is not None:
            shutil.rmtree(self._card_dir, ignore_errors=True)
            self._card_dir = None
        super().close()

    @property
    def _console(self) -> ConsoleProcess | None:
        """The live console process (privileged: for reference solvers driving the env, never agents)."""
        return self._engine.console if self._engine is not None else None

    # ---- internals ----------------------------------------------------------------------
    def _grab(self) -> np.ndarray:
        obs = self._engine.observe()  # a new array each grab
        self._last_obs = obs
        return obs.copy()

    def _finish(self, termination: str, fault: str):
        """Dump state, score it, close the console; returns the verdict."""
        state = None
        if not fault:
            try:
                state = self._engine.state()
            except ConsoleFault as exc:
                termination, fault = "fault", f"console fault: {exc}"
                self._faulted = True
        verdict = make_verdict(self.card, self._episode, self.agent_name, state, self._steps, self._rejected,
                               termination, fault, time.monotonic() - self._wall0, self._sim_time)
        self._faulted |= verdict.outcome == "INVALID"
        self._over = True
        self._stop_console()
        return verdict

    def _stop_console(self) -> None:
        """Hand the console back (kept for the next reset unless it faulted) and close input/capture."""
        if self._engine is not None:
            self._engine.close(clean=not self._faulted)
            self._engine = None


ENV_ID = "MedImageOS-v0"
if ENV_ID not in gym.registry:
    # gym.make("MedImageOS-v0", task_id="ct_ui_smoke_routine", subject="dev")
    gym.register(id=ENV_ID, entry_point="runner.env:MedImageOSEnv", nondeterministic=False)
