"""Baseline agents: no-op (never acts), a seeded random agent (random allowed actions) and a
scripted agent (a fixed list of action texts, then done: tests and hand-made demonstrations)."""
from __future__ import annotations

import json

from rendering.seeding import seeded_rng
from runner.agents.base import Observation
from tasks.card import TaskCard


class NoopAgent:
    """Waits one second every step: the floor no task may PASS."""

    name = "noop"

    def reset(self, card: TaskCard, subject: str, seed: int) -> None:
        self.card = card

    def act(self, obs: Observation) -> str:
        if "wait" in self.card.action_profile.allowed_actions:
            return json.dumps({"action": "wait", "seconds": 1})
        return json.dumps({"action": "move", "x": 4, "y": 4})


class ScriptedAgent:
    """Gives these action texts in order, then `done`."""

    name = "scripted"

    def __init__(self, outputs: list[str]) -> None:
        self.outputs = list(outputs)

    def reset(self, card: TaskCard, subject: str, seed: int) -> None:
        pass

    def act(self, obs: Observation) -> str:
        return self.outputs.pop(0) if self.outputs else '{"action": "done"}'


class RandomAgent:
    """Emits uniformly random allowed actions (never `done`), seeded per episode."""

    name = "random"

    def __init__(self, base_seed: int = 0) -> None:
        self.base_seed = base_seed

    def reset(self, card: TaskCard, subject: str, seed: int) -> None:
        self.card = card
        self.rng = seeded_rng("random-agent", self.base_seed, card.id, subject, seed)
        self.kinds = [a for a in card.action_profile.allowed_actions if a != "done"]

    def act(self, obs: Observation) -> str:
        r, p = self.rng, self.card.action_profile
        kind = self.kinds[int(r.integers(len(self.kinds)))]
        x, y = int(r.integers(obs.width)), int(r.integers(obs.height))
        a: dict = {"action": kind}
        if kind in ("click", "double_click", "move", "scroll", "drag"):
            a.update(x=x, y=y)
        if kind == "click":
            a["button"] = ["left", "left", "left", "right"][int(r.integers(4))]
        elif kind == "drag":
            a.update(to_x=int(r.integers(obs.width)), to_y=int(r.integers(obs.height)))
        elif kind == "scroll":
            a["clicks"] = int(r.choice([-3, -2, -1, 1, 2, 3]))
        elif kind == "type":
            n = int(r.integers(1, min(8, p.max_text_length) + 1))
            a["text"] = "".join(str(int(d)) for d in r.integers(0, 10, n))
        elif kind == "key":
            a["key"] = p.allowed_keys[int(r.integers(len(p.allowed_keys)))]
        elif kind == "wait":
            a["seconds"] = float(min(p.max_wait_seconds, round(float(r.uniform(0.5, 3.0)), 1)))
        return json.dumps(a)
