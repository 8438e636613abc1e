"""The documented prompt of the model-backed agent (`--agent api`).

Every request carries two messages:

* a **system prompt** (`system_prompt`) fixed per task and screen size: what the agent is, the
  screen and coordinate convention, the JSON action language restricted to the task's action
  profile (allowed action types, allowlisted keys, text and wait bounds), simulated time, and the
  reply format (one JSON object, nothing else);
* one **user message** (`user_message`) per step: the goal, the last k steps (action, status,
  feedback), the steps left, and the current screenshot as a base64 PNG `image_url` part.

History is sent as text, not as earlier screenshots, so each request holds exactly one image.
The prompt text is part of the model-cache key, so changing anything here invalidates cached
responses automatically. Bump `PROMPT_VERSION` when the wording changes so receipts say which
prompt produced a response.
"""
from __future__ import annotations

import base64
import json
from typing import Any

from runner.agents.base import Observation, StepRecord
from tasks.card import TaskCard

PROMPT_VERSION = "1"

_RAW_HISTORY_CHARS = 200  # long rejected outputs are cut in the history to keep requests small
_FEEDBACK_CHARS = 300

_MODALITY_NAMES = {"ct": "CT", "mr": "MR", "us": "ultrasound"}


def _action_lines(card: TaskCard, width: int, height: int) -> list[str]:
    """One documented line per allowed action type, in the order of the action language."""
    prof = card.action_profile
    cx, cy = width // 2, height // 2
    keys = prof.allowed_keys
    example_key = keys[0] if keys else "Enter"
    docs = {
        "click": (
            f'{{"action": "click", "x": {cx}, "y": {cy}, "button": "left"}}'
            ' - press and release a mouse button at (x, y); "button" is "left" (the default),'
            ' "right" or "middle".'
        ),
        "double_click": (
            f'{{"action": "double_click", "x": {cx}, "y": {cy}}} - double-click the left button at (x, y).'
        ),
        "drag": (
            f'{{"action": "drag", "x": {cx}, "y": {cy}, "to_x": {cx}, "to_y": {cy + 100}}}'
            " - press the left button at (x, y), move to (to_x, to_y), release there."
            " Use it to move handles, edges and lines."
        ),
        "scroll": (
            f'{{"action": "scroll", "x": {cx}, "y": {cy}, "clicks": 3}}'
            " - turn the mouse wheel over (x, y) by a non-zero whole number of clicks; positive scrolls down, negative scrolls up."
        ),
        "move": (
            f'{{"action": "move", "x": {cx}, "y": {cy}}} - move the pointer to (x, y) without clicking.'
        ),
        "type": (
            '{"action": "type", "text": "120"} - type text into the focused field (click the field'
            f" first); at most {prof.max_text_length} characters."
        ),
        "key": (
            f'{{"action": "key", "key": "{example_key}"}} - press one key or key combination.'
            " Only these are allowed: "
            + (", ".join(keys) if keys else "(none)")
            + '. Combinations are written with "+" (for example "ctrl+a") and allowed only as listed.'
        ),
        "wait": (
            '{"action": "wait", "seconds": 2} - do nothing and let simulated time pass,'
            f" at most {prof.max_wait_seconds:g} seconds."
        ),
        "done": (
            '{"action": "done"} - declare the task finished. The episode ends and the acquisition'
            " is scored as it is, so send it only when the goal is achieved."
        ),
    }
    order = ["click", "double_click", "drag", "scroll", "move", "type", "key", "wait", "done"]
    return [f"- {docs[a]}" for a in order if a in prof.allowed_actions]


def system_prompt(card: TaskCard, width: int, height: int) -> str:
    """The system prompt for one task on a width x height screen."""
    modality = _MODALITY_NAMES.get(card.modality, card.modality.upper())
    allowed = ", ".join(a for a in card.action_profile.allowed_actions)
    lines = [
        f"You operate the {modality} acquisition console of a simulated medical imaging scanner,"
        " using only its screen, the mouse and the keyboard. Your actions change the acquisition"
        " (scan ranges, slice geometry, probe pose), so later images depend on them.",
        "",
        "SCREEN",
        f"- Each turn you receive one screenshot of the whole screen, {width}x{height} pixels.",
        "- Coordinates are integer pixel positions on that screenshot: the origin (0, 0) is the"
        f" top-left corner, x grows to the right (0 to {width - 1}), y grows downward"
        f" (0 to {height - 1}).",
        "",
        "REPLY FORMAT",
        "- Reply with exactly one JSON object describing one action, and nothing else:"
        " no explanation, no markdown, no code fences.",
        '- The "action" field names the action type; the other fields are its arguments.',
        "",
        f"ACTIONS (only these types are allowed in this task: {allowed})",
        *_action_lines(card, width, height),
        "",
        "TIME",
        "- The console runs on simulated time that moves only when you act: every action takes a"
        " short nominal time, and wait advances the clock by exactly the seconds you ask for.",
        "- Nothing changes on screen between your replies unless an action causes it; to let a"
        " running process (for example a scan) progress, use wait.",
        "",
        "FEEDBACK AND BUDGET",
        "- After each step you are told whether your action was executed or rejected, and why."
        " A rejected action still uses up a step.",
        "- The number of steps is limited; the steps left are given with every screenshot.",
    ]
    return "\n".join(lines)


def _history_line(rec: StepRecord) -> str:
    if rec.action is not None:
        shown = json.dumps(rec.action, separators=(", ", ": "))
    else:
        shown = rec.raw if len(rec.raw) <= _RAW_HISTORY_CHARS else rec.raw[:_RAW_HISTORY_CHARS] + "..."
        shown = json.dumps(shown)  # quoted so a multi-line raw output stays on one line
    feedback = rec.feedback if len(rec.feedback) <= _FEEDBACK_CHARS else rec.feedback[:_FEEDBACK_CHARS] + "..."
    line = f"- step {rec.step}: {shown} -> {rec.status}"
    return line + (f". Feedback: {feedback}" if feedback else "")


def png_data_url(png: bytes) -> str:
    """A data URL carrying PNG bytes, as sent in the image_url part."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def user_message(obs: Observation, k_history: int) -> list[dict[str, Any]]:
    """Content parts of the user message for one step: text, then the screenshot image part."""
    recent = obs.history[-k_history:] if k_history > 0 else []
    lines = [f"Goal: {obs.goal}", ""]
    if recent:
        lines.append(f"Your last {len(recent)} step(s), oldest first:")
        lines.extend(_history_line(r) for r in recent)
    else:
        lines.append("No previous steps.")
    lines += [
        "",
        f"This is step {obs.step}. Steps left: {obs.steps_left}.",
        f"The current screenshot ({obs.width}x{obs.height}) follows. Reply with one JSON action.",
    ]
    return [
        {"type": "text", "text": "\n".join(lines)},
        {"type": "image_url", "image_url": {"url": png_data_url(obs.screenshot_png)}},
    ]
