"""The project's own prompt (runner/agents/prompt.py) as an adapter: JSON actions in screen pixels.

Requests are exactly those of the agent before adapters existed: the system prompt, then one user
message with the goal, the last k steps as text and the screenshot at screen size. Replies go
through `runner.actions.parse_action` (project JSON, computer_13 dicts, one pyautogui call), with
the run's --coord-scale (pixels, or norm1000).
"""
from __future__ import annotations

import inspect
from typing import Any

from runner.actions import ParseResult, ParserState, parse_action
from runner.agents import prompt
from runner.agents.adapters.base import Adapter, Turn
from runner.agents.base import Observation
from tasks.card import ActionProfile, TaskCard


class GenericAdapter(Adapter):
    name = "generic"
    version = prompt.PROMPT_VERSION
    family = "any vision chat model (OpenAI-compatible)"
    source_format = "project JSON action (computer_13 dicts and one pyautogui call accepted)"
    coordinates = "screen pixels (or 0-1000 with --coord-scale norm1000)"
    history = "last k steps as text (--history-k), 1 image"
    history_images = 1
    serve = "vllm serve MODEL"

    def __init__(self, history_k: int = 3) -> None:
        if history_k < 0:
            raise ValueError("history_k must be >= 0")
        self.history_k = history_k
        self._system: dict[tuple[str, int, int], str] = {}

    def prompt_template(self) -> str:
        # the prompt is code, not a template string: hash the functions that write it
        return inspect.getsource(prompt)

    def build_messages(self, card: TaskCard, obs: Observation, image_png: bytes, turns: list[Turn]
                       ) -> list[dict[str, Any]]:
        key = (card.id, obs.width, obs.height)
        if key not in self._system:
            self._system[key] = prompt.system_prompt(card, obs.width, obs.height)
        return [{"role": "system", "content": self._system[key]},
                {"role": "user", "content": prompt.user_message(obs, self.history_k)}]

    def parse(self, raw: Any, profile: ActionProfile, screen: tuple[int, int], *, coord_scale: str = "pixels",
              state: ParserState | None = None) -> ParseResult:
        return parse_action(raw, profile, screen, coord_scale=coord_scale, state=state)
