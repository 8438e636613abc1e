"""The agent adapter interface: one model family's prompt, history, image size and reply format.

An adapter owns everything that depends on the model's trained action language:

* the messages of each request (`build_messages`): system prompt, how history is sent (as text,
  or the last k screenshots as images with the model's own earlier replies) and the current
  screenshot, already resized to the size the model expects (`image_size`);
* how a reply becomes one of our actions (`parse`), including the coordinate mapping from the
  model's space (resized image, 0-1000 grid, 0-1 unit square) back to screen pixels.

Replies are parsed, never executed: native formats are read with regular expressions, `json` and
`ast` (literals only), translated to the project's JSON action in screen pixels, and that action is
validated by `runner.actions.parse_action` against the task's action profile, so a disallowed or
malformed action is a rejected step with feedback exactly as for the generic prompt.

`describe()` is what receipts and scores.json record: name, version, prompt hash (of the fixed
prompt text, so any wording change shows) and the image size sent.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from runner.actions import ParseResult, ParserState, parse_action, scale_point
from runner.agents.base import Observation
from runner.agents.prompt import png_data_url
from tasks.card import ActionProfile, TaskCard


@dataclass(frozen=True)
class Turn:
    """One earlier step of this episode as an adapter may replay it."""

    step: int
    image_png: bytes | None  # the screenshot as sent to the model (resized), None if not kept
    reply: str  # the model's raw reply
    status: str  # "executed" | "rejected"
    feedback: str


class AdapterReject(Exception):
    """A reply that cannot be read in the adapter's format; the message is the agent's feedback."""


@dataclass(frozen=True)
class DisplayStep:
    """What parse_native returns for a display-only tool action (a vendor tool's screenshot, zoom or cursor
    query): the step is executed without input or clock advance and `feedback` is its feedback text."""

    feedback: str


class Adapter:
    """Base class; subclasses set the class attributes and implement build_messages/parse_native."""

    name: str = ""
    version: str = "1"
    family: str = ""  # the model family it follows
    source_format: str = ""  # the published action language
    coordinates: str = ""  # the coordinate convention, in words
    history: str = ""  # how history is sent, in words
    history_images: int = 1  # images in a request, at most (current screenshot included)
    serve: str = ""  # a vLLM command for the family
    example_model: str = ""

    # -- sizes and identity -------------------------------------------------------------------
    def image_size(self, screen: tuple[int, int]) -> tuple[int, int]:
        """(width, height) of the screenshot as sent for a screen of `screen` pixels."""
        return screen

    def prompt_template(self) -> str:
        """The fixed prompt text (templates before task values are filled in), for the hash."""
        raise NotImplementedError

    def prompt_hash(self) -> str:
        payload = json.dumps({"adapter": self.name, "version": self.version, "template": self.prompt_template()},
                             sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]

    def describe(self, screen: tuple[int, int] | None = None) -> dict[str, Any]:
        """Receipt / scores.json fields; image_size only when the screen is known."""
        d: dict[str, Any] = {"adapter": self.name, "adapter_version": self.version, "prompt_hash": self.prompt_hash()}
        if screen is not None:
            d["image_size"] = list(self.image_size(screen))
        return d

    def listing(self) -> dict[str, str]:
        """One row of `medimageos agents list`."""
        return {"name": self.name, "family": self.family, "format": self.source_format,
                "coordinates": self.coordinates, "history": self.history, "serve": self.serve}

    # -- requests -----------------------------------------------------------------------------
    def build_messages(self, card: TaskCard, obs: Observation, image_png: bytes, turns: list[Turn]
                       ) -> list[dict[str, Any]]:
        """The chat messages for this step; `image_png` is the current screenshot, already resized."""
        raise NotImplementedError

    # -- replies ------------------------------------------------------------------------------
    def parse(self, raw: Any, profile: ActionProfile, screen: tuple[int, int], *, coord_scale: str = "pixels",
              state: ParserState | None = None) -> ParseResult:
        """Reply -> validated action (or a rejection with feedback). Never raises on model text."""
        if not isinstance(raw, str) or not raw.strip():
            return ParseResult(None, [], f"empty reply; answer in the {self.source_format} format", self.name)
        repairs: list[str] = []
        try:
            action = self.parse_native(raw, profile, screen, state, repairs)
        except AdapterReject as exc:
            return ParseResult(None, repairs, str(exc), self.name)
        except Exception as exc:  # noqa: BLE001 - a parser bug must not end the episode
            return ParseResult(None, repairs, f"internal error reading the reply ({type(exc).__name__}); "
                                              f"answer in the {self.source_format} format", self.name)
        if isinstance(action, DisplayStep):
            return ParseResult(None, repairs, None, self.name, display=action.feedback)
        if isinstance(action, str):  # a pyautogui call rewritten into screen pixels
            res = parse_action(action, profile, screen, state=state)
        else:
            res = parse_action(json.dumps(action), profile, screen, state=state)
        return ParseResult(res.action, repairs + res.repairs, res.error, self.name)

    def parse_native(self, raw: str, profile: ActionProfile, screen: tuple[int, int], state: ParserState | None,
                     repairs: list[str]) -> dict[str, Any] | str | DisplayStep:
        """The reply as a project JSON action dict in screen pixels (or a pyautogui call string in
        pixels, or a DisplayStep); raise AdapterReject with feedback when it cannot be read."""
        raise NotImplementedError

    # -- helpers for subclasses ---------------------------------------------------------------
    @staticmethod
    def to_screen(x: Any, y: Any, source: tuple[float, float], screen: tuple[int, int]) -> tuple[int, int]:
        """Model coordinates -> screen pixel, or AdapterReject naming the model's space."""
        try:
            return scale_point(_number(x), _number(y), source, screen)
        except ValueError as exc:
            raise AdapterReject(f"coordinates {exc}") from None

    @staticmethod
    def image_part(png: bytes) -> dict[str, Any]:
        return {"type": "image_url", "image_url": {"url": png_data_url(png)}}

    @staticmethod
    def pointer(state: ParserState | None, what: str) -> tuple[int, int]:
        if state is None or state.pointer is None:
            raise AdapterReject(f"{what} starts at the pointer, whose position is unknown; give coordinates")
        return state.pointer


def _number(v: Any) -> float:
    if isinstance(v, str):
        try:
            return float(v.strip())
        except ValueError:
            raise ValueError(f"must be numbers, got {v!r}") from None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"must be numbers, got {v!r}")
    return float(v)


def rejected_note(turn: Turn) -> str:
    """The text that tells a native-format model its earlier step was not executed."""
    return f"Step {turn.step + 1} was rejected and not executed: {turn.feedback}"
