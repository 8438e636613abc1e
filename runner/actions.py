"""Agent output -> one validated, normalized action. Pure logic: no display, no Qt, nothing executed.

Three input formats are accepted, all *parsed*, never evaluated:

1. The project's JSON language: ``{"action": "click", "x": 10, "y": 20, "button": "left"}``,
   ``double_click {x, y}``, ``drag {x, y, to_x, to_y}``, ``scroll {x, y, clicks}`` (+ is down),
   ``move {x, y}``, ``type {text}``, ``key {key}`` (or ``keys: [...]``), ``wait {seconds}``,
   ``done {}``. The JSON may sit in prose or a code fence.
2. OSWorld ``computer_13`` dicts: ``{"action_type": "CLICK", "parameters": {...}}``.
3. One call from a safe subset of pyautogui (``pyautogui.click(100, 200)``), read with ``ast``;
   every argument must be a literal.

Whatever the format, the result is an :class:`Action` checked against the task's
:class:`~tasks.card.ActionProfile` and the screen size. Every liberty taken on the way
(aliases, rounding, sign conversion, ignored fields) is listed in ``ParseResult.repairs`` for the
receipt; a rejection carries a short ``error`` that tells the agent what was wrong and how to fix
it. ``parse_action`` never raises on agent text.

``Action.to_dict()`` emits the project JSON language, so ``json.dumps(action.to_dict())`` parses
back to the same action with no repairs (replay relies on this).
"""
from __future__ import annotations

import ast
import json
import math
import re
import unicodedata
import warnings
from dataclasses import dataclass, field
from typing import Any

from tasks.card import ACTION_TYPES, ActionProfile

__all__ = [
    "Action",
    "ParseResult",
    "ParserState",
    "parse_action",
    "NOMINAL_SECONDS",
    "TYPE_SECONDS_PER_CHAR",
    "MAX_SCROLL_CLICKS",
    "DEFAULT_WAIT_SECONDS",
    "MAX_RAW_CHARS",
    "nominal_duration",
    "key_to_keysyms",
    "scale_point",
]

MAX_SCROLL_CLICKS = 20
DEFAULT_WAIT_SECONDS = 1.0  # used when a wait names no duration (computer_13 WAIT has none)
MAX_RAW_CHARS = 65536  # longer responses are rejected rather than scanned
_MAX_OBJECT_STARTS = 32  # how many '{' positions to try when digging JSON out of prose
EXAMPLE = '{"action": "click", "x": 640, "y": 400}'

# Simulated seconds each action takes on the console clock. Chosen to resemble a brisk human
# operator; what matters is that they are fixed, so runs are deterministic. `type` costs
# TYPE_SECONDS_PER_CHAR per character with NOMINAL_SECONDS["type"] as the floor; `wait` costs
# exactly what it asks for (the 0.0 here is never used).
NOMINAL_SECONDS: dict[str, float] = {
    "click": 0.5,
    "double_click": 0.6,
    "drag": 1.0,
    "scroll": 0.3,
    "move": 0.2,
    "type": 0.5,
    "key": 0.3,
    "wait": 0.0,
    "done": 0.0,
}
TYPE_SECONDS_PER_CHAR = 0.1


# --------------------------------------------------------------------------------------------
# Public data types


@dataclass(frozen=True)
class Action:
    """One canonical action, in screen pixels."""

    type: str
    x: int | None = None
    y: int | None = None
    x2: int | None = None
    y2: int | None = None
    button: str = "left"
    clicks: int = 0
    text: str | None = None
    key: str | None = None
    seconds: float | None = None

    def __post_init__(self) -> None:
        if self.type not in ACTION_TYPES:
            raise ValueError(f"unknown action type {self.type!r}; known: {list(ACTION_TYPES)}")

    def to_dict(self) -> dict[str, Any]:
        """The action in the project's JSON language (only the fields its type uses)."""
        d: dict[str, Any] = {"action": self.type}
        t = self.type
        if t in ("click", "double_click", "move", "scroll", "drag"):
            d["x"], d["y"] = self.x, self.y
        if t == "click":
            d["button"] = self.button
        elif t == "drag":
            d["to_x"], d["to_y"] = self.x2, self.y2
        elif t == "scroll":
            d["clicks"] = self.clicks
        elif t == "type":
            d["text"] = self.text
        elif t == "key":
            d["key"] = self.key
        elif t == "wait":
            d["seconds"] = self.seconds
        return d


@dataclass
class ParseResult:
    """Outcome of parsing one agent response. `error` is feedback for the agent when rejected."""

    action: Action | None
    repairs: list[str] = field(default_factory=list)
    error: str | None = None
    source: str | None = None  # "json" | "computer_13" | "pyautogui" | "word", when recognized
    # A display-only step (a vendor tool's screenshot, zoom or cursor query): no input, no clock advance,
    # but it is executed and costs its step; the text is the step's feedback. Set only with action None.
    display: str | None = None

    @property
    def ok(self) -> bool:
        return self.action is not None and self.error is None


@dataclass
class ParserState:
    """What the parser needs to remember between steps: the last known pointer position (pixels).

    Formats where a pointer action may omit coordinates (computer_13 ``DRAG_TO``/``SCROLL``/
    ``CLICK``, ``pyautogui.dragTo``/``click()``/``scroll``) act from this position. The caller
    must call :meth:`observe` after each *executed* action (or set ``pointer`` from the X server).
    """

    pointer: tuple[int, int] | None = None

    def observe(self, action: Action) -> None:
        """Record where the pointer is after `action` was executed."""
        if action.type == "drag":
            self.pointer = (action.x2, action.y2)  # type: ignore[assignment]
        elif action.type in ("click", "double_click", "move", "scroll") and action.x is not None:
            self.pointer = (action.x, action.y)  # type: ignore[assignment]


def nominal_duration(action: Action) -> float:
    """Simulated seconds the console clock advances for `action`."""
    if action.type == "wait":
        return float(action.seconds or 0.0)
    if action.type == "type":
        n = len(action.text or "")
        return round(max(NOMINAL_SECONDS["type"], TYPE_SECONDS_PER_CHAR * n), 6)
    return NOMINAL_SECONDS[action.type]


# --------------------------------------------------------------------------------------------
# Coordinate mapping for model-native formats (runner/agents/adapters)


def scale_point(x: float, y: float, source: tuple[float, float], screen: tuple[int, int]) -> tuple[int, int]:
    """A point in a model's coordinate space -> the screen pixel it names.

    `source` is the (width, height) of that space: the resized image the model saw (Qwen2.5-VL,
    UI-TARS-1.5), a 1000 x 1000 grid (Qwen3-VL) or (1, 1) for normalized coordinates (OpenCUA).
    The pixel is round-half-up of x * W / width (and y likewise), kept inside the screen, so the
    right and bottom edges of the source space land on the last pixel. ValueError when the point
    is not a finite number inside [0, width] x [0, height].
    """
    sw, sh = source
    w, h = screen
    for v in (x, y):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"coordinates must be finite numbers, got ({x!r}, {y!r})")
    if not (0 <= x <= sw and 0 <= y <= sh):
        raise ValueError(f"({_num(x)}, {_num(y)}) is outside the {_num(sw)}x{_num(sh)} coordinate space")
    px = min(w - 1, int(math.floor(x * w / sw + 0.5)))
    py = min(h - 1, int(math.floor(y * h / sh + 0.5)))
    return px, py


# --------------------------------------------------------------------------------------------
# Internal plumbing


class _Reject(Exception):
    """Raised inside the parser; becomes ParseResult.error."""


class _Ctx:
    """Per-call parsing context: profile, screen, scaling, state and the repair log."""

    def __init__(self, profile: ActionProfile, screen: tuple[int, int], coord_scale: str,
                 state: ParserState | None) -> None:
        self.profile = profile
        self.w, self.h = screen
        self.scale = coord_scale
        self.state = state
        self.repairs: list[str] = []
        self.source: str | None = None

    def repair(self, note: str) -> None:
        if note not in self.repairs:
            self.repairs.append(note)

    # -- coordinates ---------------------------------------------------------------------------
    def number(self, value: Any, what: str) -> float:
        if isinstance(value, bool) or value is None:
            raise _Reject(f"{what} must be a number, got {json.dumps(value)}")
        if isinstance(value, str):
            try:
                num = float(value.strip())
            except ValueError:
                raise _Reject(f"{what} must be a number, got {_short(value)}") from None
            self.repair(f"converted string {what} to a number")
            value = num
        if not isinstance(value, (int, float)):
            raise _Reject(f"{what} must be a number, got {_short(value)}")
        if isinstance(value, float) and not math.isfinite(value):
            raise _Reject(f"{what} must be a finite number")
        return value

    def point(self, x: Any, y: Any) -> tuple[int, int]:
        """Agent coordinates -> on-screen pixel ints (scaled from 0-1000 if asked)."""
        fx, fy = self.number(x, "x"), self.number(y, "y")
        if self.scale == "norm1000":
            if not (0 <= fx <= 1000 and 0 <= fy <= 1000):
                raise _Reject(f"coordinates ({_num(fx)},{_num(fy)}) are outside the 0-1000 grid; "
                              "use 0 <= x, y <= 1000")
            px = min(self.w - 1, int(math.floor(fx * self.w / 1000 + 0.5)))
            py = min(self.h - 1, int(math.floor(fy * self.h / 1000 + 0.5)))
            self.repair(f"scaled coordinates from the 0-1000 grid to {self.w}x{self.h} pixels")
            return px, py
        if isinstance(fx, float) or isinstance(fy, float):
            if not (float(fx).is_integer() and float(fy).is_integer()):
                self.repair("rounded fractional pixel coordinates")
            px, py = int(math.floor(fx + 0.5)), int(math.floor(fy + 0.5))
        else:
            px, py = int(fx), int(fy)
        if not (0 <= px < self.w and 0 <= py < self.h):
            raise _Reject(f"coordinates ({px},{py}) are off screen (screen is {self.w}x{self.h}); "
                          f"use 0 <= x < {self.w} and 0 <= y < {self.h}")
        return px, py

    def pointer(self, what: str) -> tuple[int, int]:
        """The current pointer, for actions given without coordinates."""
        if self.state is None or self.state.pointer is None:
            raise _Reject(f"{what} needs coordinates: the pointer position is unknown; "
                          "give x and y explicitly")
        px, py = self.state.pointer
        self.repair(f"{what} at the current pointer position ({px},{py})")
        return int(px), int(py)

    def point_or_pointer(self, x: Any, y: Any, what: str) -> tuple[int, int]:
        if x is None and y is None:
            return self.pointer(what)
        if x is None or y is None:
            raise _Reject(f"{what} needs both x and y")
        return self.point(x, y)


def _short(value: Any, limit: int = 40) -> str:
    try:
        s = json.dumps(value)
    except (TypeError, ValueError):
        try:
            s = repr(value)
        except ValueError:  # e.g. an int too long to print
            s = f"<{type(value).__name__}>"
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


# --------------------------------------------------------------------------------------------
# Keys

_MODIFIERS = ("ctrl", "alt", "shift", "super")
_KEY_ALIASES = {
    "return": "enter", "ret": "enter", "kpenter": "enter", "newline": "enter",
    "esc": "escape",
    "back": "backspace", "bksp": "backspace", "bs": "backspace",
    "del": "delete",
    "pageup": "pageup", "pgup": "pageup", "prior": "pageup",
    "pagedown": "pagedown", "pgdn": "pagedown", "pgdown": "pagedown", "next": "pagedown",
    "arrowup": "up", "uparrow": "up", "arrowdown": "down", "downarrow": "down",
    "arrowleft": "left", "leftarrow": "left", "arrowright": "right", "rightarrow": "right",
    "control": "ctrl", "ctl": "ctrl", "ctrll": "ctrl", "ctrlr": "ctrl", "controll": "ctrl",
    "controlr": "ctrl", "strg": "ctrl",
    "altl": "alt", "altr": "alt", "option": "alt", "opt": "alt", "menu": "alt",
    "shiftl": "shift", "shiftr": "shift",
    "win": "super", "windows": "super", "cmd": "super", "command": "super", "meta": "super",
    "superl": "super", "superr": "super",
    "ins": "insert", "spacebar": "space",
}


def _key_token(tok: str) -> str:
    """One key name -> comparison id: case-, underscore- and alias-insensitive."""
    if len(tok) == 1:
        return "space" if tok == " " else tok.lower()
    t = re.sub(r"[\s_\-]", "", tok.strip().lower())
    return _KEY_ALIASES.get(t, t)


def _key_id(parts: list[str]) -> tuple[str, ...]:
    ids = [_key_token(p) for p in parts]
    mods = [m for m in _MODIFIERS if m in ids]
    rest = []
    for i in ids:
        if i not in _MODIFIERS and i not in rest:
            rest.append(i)
    return tuple(mods + rest)


def _split_combo(key: str) -> list[str]:
    s = key.strip()
    if len(s) <= 1 or "+" not in s:
        return [s if s else key]
    parts = s.split("+")
    if s.endswith("++"):  # "ctrl++": the plus key itself
        parts = parts[:-2] + ["+"]
    return [p.strip() for p in parts if p.strip() != ""] or [s]


def _normalize_key(parts: list[str], raw_repr: str, ctx: _Ctx) -> str:
    """Match a key or combo against the allowlist; return the allowlist's spelling."""
    if not parts or any(not isinstance(p, str) or p == "" for p in parts):
        raise _Reject("key must be a non-empty key name such as \"Enter\" or \"ctrl+a\"")
    wanted = _key_id(parts)
    for allowed in ctx.profile.allowed_keys:
        if _key_id(_split_combo(allowed)) == wanted:
            if allowed != raw_repr:
                ctx.repair(f"key {raw_repr!r} normalized to {allowed!r}")
            return allowed
    allowed_list = ", ".join(ctx.profile.allowed_keys)
    raise _Reject(f"key {raw_repr!r} is not allowed in this task; allowed keys: {allowed_list}")


def _key_from_value(value: Any, ctx: _Ctx, *, list_is_native: bool = False) -> str:
    if isinstance(value, str):
        return _normalize_key(_split_combo(value), value, ctx)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        joined = "+".join(value)
        if len(value) > 1 and not list_is_native:
            ctx.repair(f"key list {list(value)} read as the combination {joined!r}")
        return _normalize_key([v.strip() if len(v) > 1 else v for v in value], joined, ctx)
    raise _Reject("key must be a key name such as \"Enter\" or a combination such as \"ctrl+a\"")


_KEYSYMS = {
    "enter": "Return", "escape": "Escape", "backspace": "BackSpace", "delete": "Delete",
    "tab": "Tab", "up": "Up", "down": "Down", "left": "Left", "right": "Right",
    "home": "Home", "end": "End", "pageup": "Page_Up", "pagedown": "Page_Down",
    "insert": "Insert", "space": "space",
    "ctrl": "Control_L", "alt": "Alt_L", "shift": "Shift_L", "super": "Super_L",
    "-": "minus", "+": "plus", "=": "equal", ",": "comma", ".": "period", "/": "slash",
    ";": "semicolon", "'": "apostrophe", "[": "bracketleft", "]": "bracketright",
    "\\": "backslash", "`": "grave",
}


def key_to_keysyms(key: str) -> list[str]:
    """X keysym names for a normalized key or combo, modifiers first: "ctrl+a" -> ["Control_L", "a"].

    For the input injector; press them in order and release in reverse.
    """
    out = []
    for tok in _key_id(_split_combo(key)):
        if tok in _KEYSYMS:
            out.append(_KEYSYMS[tok])
        elif re.fullmatch(r"f([1-9]|1[0-9]|2[0-4])", tok):
            out.append(tok.upper())
        else:
            out.append(tok)
    return out


# --------------------------------------------------------------------------------------------
# Field validation shared by all formats


def _check_text(value: Any, ctx: _Ctx) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        ctx.repair("converted numeric text to a string")
        value = _num(value) if isinstance(value, float) else str(value)
    if not isinstance(value, str):
        raise _Reject("type needs \"text\": a string to type")
    if value == "":
        raise _Reject("type text is empty; give the characters to type")
    if any(unicodedata.category(c).startswith("C") for c in value):
        raise _Reject("text contains a newline or control character; type plain text and send "
                      "Enter or Tab as a separate key action")
    limit = ctx.profile.max_text_length
    if len(value) > limit:
        raise _Reject(f"text is too long ({len(value)} characters, at most {limit}); "
                      "type it in shorter pieces")
    return value


def _check_seconds(value: Any, ctx: _Ctx) -> float:
    bound = ctx.profile.max_wait_seconds
    if value is None:
        secs = min(DEFAULT_WAIT_SECONDS, bound)
        ctx.repair(f"wait without seconds: waited {_num(secs)} s")
        return float(secs)
    secs = float(ctx.number(value, "seconds"))
    if not (0 < secs <= bound):
        raise _Reject(f"wait seconds must be > 0 and <= {_num(bound)}, got {_num(secs)}")
    return secs


def _check_clicks(value: Any, ctx: _Ctx) -> int:
    num = ctx.number(value, "clicks")
    clicks = int(math.floor(num + 0.5)) if isinstance(num, float) else int(num)
    if isinstance(num, float) and not float(num).is_integer():
        ctx.repair("rounded scroll clicks to a whole number")
    if clicks == 0:
        raise _Reject("scroll clicks must be a non-zero whole number (+ scrolls down, - up)")
    if abs(clicks) > MAX_SCROLL_CLICKS:
        raise _Reject(f"scroll clicks must be between -{MAX_SCROLL_CLICKS} and "
                      f"{MAX_SCROLL_CLICKS}, got {clicks}")
    return clicks


def _check_button(value: Any) -> str:
    if not isinstance(value, str) or value.strip().lower() not in ("left", "right", "middle"):
        raise _Reject(f"button must be \"left\", \"right\" or \"middle\", got {_short(value)}")
    return value.strip().lower()


def _check_allowed(kind: str, ctx: _Ctx) -> None:
    allowed = ctx.profile.allowed_actions
    if kind not in allowed:
        raise _Reject(f"action {kind!r} is not allowed in this task; allowed: {', '.join(allowed)}")


# --------------------------------------------------------------------------------------------
# Format 1: project JSON

_ACTION_ALIASES = {
    "click": "click", "leftclick": "click", "left_click": "click", "tap": "click",
    "rightclick": "click", "right_click": "click", "middleclick": "click", "middle_click": "click",
    "doubleclick": "double_click", "double_click": "double_click", "dblclick": "double_click",
    "double": "double_click",
    "drag": "drag", "dragto": "drag", "drag_to": "drag", "draganddrop": "drag",
    "drag_and_drop": "drag", "left_click_drag": "drag",
    "scroll": "scroll", "wheel": "scroll",
    "move": "move", "moveto": "move", "move_to": "move", "mousemove": "move",
    "mouse_move": "move", "hover": "move",
    "type": "type", "typing": "type", "write": "type", "type_text": "type", "input": "type",
    "typewrite": "type",
    "key": "key", "press": "key", "keypress": "key", "key_press": "key", "hotkey": "key",
    "keys": "key",
    "wait": "wait", "sleep": "wait", "pause": "wait",
    "done": "done", "finish": "done", "finished": "done", "stop": "done", "terminate": "done",
}
_IMPLIED_BUTTON = {"rightclick": "right", "right_click": "right", "middleclick": "middle",
                   "middle_click": "middle"}
_COORD_LIST_FIELDS = ("coordinate", "coordinates", "position", "point", "pos")
_KNOWN_FIELDS = {
    "click": {"x", "y", "button"},
    "double_click": {"x", "y", "button"},
    "drag": {"x", "y", "to_x", "to_y", "x2", "y2", "start", "end", "x1", "y1"},
    "scroll": {"x", "y", "clicks", "dy", "direction", "amount"},
    "move": {"x", "y"},
    "type": {"text"},
    "key": {"key", "keys"},
    "wait": {"seconds"},
    "done": set(),
}
_NESTED_PARAMS = ("parameters", "params", "args", "arguments")


def _pair(value: Any, name: str) -> tuple[Any, Any]:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return value[0], value[1]
    if isinstance(value, dict) and "x" in value and "y" in value:
        return value["x"], value["y"]
    raise _Reject(f"{name} must be a pair [x, y]")


def _from_project_json(d: dict[str, Any], disc: str, ctx: _Ctx) -> Action:
    name = d[disc]
    if not isinstance(name, str):
        raise _Reject(f"\"{disc}\" must be an action name such as \"click\"; see {EXAMPLE}")
    norm = re.sub(r"[\s\-]", "_", name.strip().lower())
    kind = _ACTION_ALIASES.get(norm) or _ACTION_ALIASES.get(norm.replace("_", ""))
    if kind is None:
        raise _Reject(f"unknown action {_short(name)}; use one of: "
                      f"{', '.join(ctx.profile.allowed_actions)}")
    if kind != name:
        ctx.repair(f"action {name!r} read as {kind!r}")
    _check_allowed(kind, ctx)

    fields = {k: v for k, v in d.items() if k != disc}
    for nest in _NESTED_PARAMS:
        if isinstance(fields.get(nest), dict):
            inner = fields.pop(nest)
            ctx.repair(f"read fields from nested {nest!r}")
            for k, v in inner.items():
                fields.setdefault(k, v)
    if "x" not in fields and "y" not in fields:
        for alias in _COORD_LIST_FIELDS:
            if alias in fields and kind in ("click", "double_click", "move", "scroll", "drag"):
                fields["x"], fields["y"] = _pair(fields.pop(alias), alias)
                ctx.repair(f"read x, y from {alias!r}")
                break
    unknown = sorted(k for k in fields if k not in _KNOWN_FIELDS[kind])
    if unknown:
        ctx.repair(f"ignored unknown field(s): {', '.join(unknown)}")
    f = {k: v for k, v in fields.items() if k in _KNOWN_FIELDS[kind]}

    if kind == "click":
        button = _IMPLIED_BUTTON.get(norm)
        if "button" in f:
            b = _check_button(f["button"])
            if button and b != button:
                raise _Reject(f"action {name!r} conflicts with button {b!r}")
            button = b
        x, y = ctx.point_or_pointer(f.get("x"), f.get("y"), "click")
        return Action("click", x=x, y=y, button=button or "left")
    if kind == "double_click":
        if "button" in f and _check_button(f["button"]) != "left":
            raise _Reject("double_click uses the left button only")
        x, y = ctx.point_or_pointer(f.get("x"), f.get("y"), "double_click")
        return Action("double_click", x=x, y=y)
    if kind == "move":
        x, y = ctx.point_or_pointer(f.get("x"), f.get("y"), "move")
        return Action("move", x=x, y=y)
    if kind == "drag":
        return _project_drag(f, ctx)
    if kind == "scroll":
        return _project_scroll(f, ctx)
    if kind == "type":
        return Action("type", text=_check_text(f.get("text"), ctx))
    if kind == "key":
        if "key" in f:
            if "keys" in f:
                ctx.repair("both key and keys given: used key")
            return Action("key", key=_key_from_value(f["key"], ctx))
        if "keys" in f:
            return Action("key", key=_key_from_value(f["keys"], ctx))
        raise _Reject("key needs \"key\", e.g. {\"action\": \"key\", \"key\": \"Enter\"}")
    if kind == "wait":
        return Action("wait", seconds=_check_seconds(f.get("seconds"), ctx))
    return Action("done")


def _project_drag(f: dict[str, Any], ctx: _Ctx) -> Action:
    start = end = None
    if "start" in f or "end" in f:
        if "start" not in f or "end" not in f:
            raise _Reject("drag needs both start and end, or x, y, to_x, to_y")
        start, end = _pair(f["start"], "start"), _pair(f["end"], "end")
        ctx.repair("read drag start/end pairs as x, y, to_x, to_y")
    else:
        sx, sy = f.get("x", f.get("x1")), f.get("y", f.get("y1"))
        if "x" not in f and "x1" in f:
            ctx.repair("read x1, y1 as x, y")
        ex, ey = f.get("to_x"), f.get("to_y")
        if ex is None and ey is None and ("x2" in f or "y2" in f):
            ex, ey = f.get("x2"), f.get("y2")
            ctx.repair("read x2, y2 as to_x, to_y")
        if ex is None or ey is None:
            raise _Reject("drag needs the end point: {\"action\": \"drag\", \"x\": .., \"y\": .., "
                          "\"to_x\": .., \"to_y\": ..}")
        start, end = (sx, sy), (ex, ey)
    x, y = ctx.point_or_pointer(start[0], start[1], "drag")
    x2, y2 = ctx.point(end[0], end[1])
    return Action("drag", x=x, y=y, x2=x2, y2=y2)


def _project_scroll(f: dict[str, Any], ctx: _Ctx) -> Action:
    if "clicks" in f:
        raw = f["clicks"]
    elif "dy" in f:
        raw = f["dy"]
        ctx.repair("read dy as clicks (+ is down)")
    elif "amount" in f or "direction" in f:
        raw = f.get("amount", 3)
        if "amount" not in f:
            ctx.repair("scroll without amount: used 3 clicks")
    else:
        raise _Reject("scroll needs \"clicks\": + scrolls down, - scrolls up, e.g. "
                      "{\"action\": \"scroll\", \"x\": 640, \"y\": 400, \"clicks\": 3}")
    clicks = _check_clicks(raw, ctx)
    if "direction" in f:
        direction = f["direction"]
        if not isinstance(direction, str) or direction.strip().lower() not in ("up", "down"):
            raise _Reject("scroll direction must be \"up\" or \"down\" (horizontal scroll is not "
                          "supported)")
        sign = -1 if direction.strip().lower() == "up" else 1
        clicks = sign * abs(clicks)
        ctx.repair(f"read direction {direction!r} as the sign of clicks")
    x, y = ctx.point_or_pointer(f.get("x"), f.get("y"), "scroll")
    return Action("scroll", x=x, y=y, clicks=clicks)


# --------------------------------------------------------------------------------------------
# Format 2: OSWorld computer_13

_C13_SUPPORTED = ("MOVE_TO", "CLICK", "RIGHT_CLICK", "DOUBLE_CLICK", "DRAG_TO", "SCROLL",
                  "TYPING", "PRESS", "HOTKEY", "WAIT", "DONE", "FAIL")
_C13_UNSUPPORTED = ("MOUSE_DOWN", "MOUSE_UP", "KEY_DOWN", "KEY_UP")
_C13_KNOWN = {
    "MOVE_TO": {"x", "y"}, "CLICK": {"x", "y", "button", "num_clicks"},
    "RIGHT_CLICK": {"x", "y"}, "DOUBLE_CLICK": {"x", "y"}, "DRAG_TO": {"x", "y", "start"},
    "SCROLL": {"dx", "dy", "x", "y"}, "TYPING": {"text"}, "PRESS": {"key"}, "HOTKEY": {"keys"},
    "WAIT": {"seconds", "time", "duration"}, "DONE": set(), "FAIL": set(),
}
_C13_KIND = {"MOVE_TO": "move", "RIGHT_CLICK": "click", "DOUBLE_CLICK": "double_click",
             "DRAG_TO": "drag", "SCROLL": "scroll", "TYPING": "type", "PRESS": "key",
             "HOTKEY": "key", "WAIT": "wait", "DONE": "done", "FAIL": "done"}


def _from_computer13(d: dict[str, Any], ctx: _Ctx) -> Action:
    name = d["action_type"]
    if not isinstance(name, str):
        raise _Reject("action_type must be a name such as \"CLICK\"")
    at = name.strip().upper()
    if at in _C13_UNSUPPORTED:
        raise _Reject(f"{at} is not supported (no held buttons or keys); use one of: "
                      f"{', '.join(_C13_SUPPORTED)}")
    if at not in _C13_SUPPORTED:
        raise _Reject(f"unknown action_type {_short(name)}; use one of: {', '.join(_C13_SUPPORTED)}")
    params = d.get("parameters", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise _Reject("parameters must be an object, e.g. {\"x\": 100, \"y\": 200}")
    top = {k: v for k, v in d.items() if k not in ("action_type", "parameters")}
    p = dict(params)
    for k, v in top.items():  # some agents put parameters at the top level
        if k in _C13_KNOWN[at] and k not in p:
            p[k] = v
    unknown = sorted(k for k in list(params) + list(top) if k not in _C13_KNOWN[at])
    if unknown:
        ctx.repair(f"ignored unknown field(s): {', '.join(unknown)}")

    kind = _C13_KIND.get(at)
    if at == "CLICK":
        n = p.get("num_clicks", 1)
        if isinstance(n, bool) or n not in (1, 2):
            raise _Reject(f"num_clicks must be 1 or 2, got {_short(n)}")
        button = _check_button(p.get("button", "left"))
        kind = "double_click" if n == 2 else "click"
        _check_allowed(kind, ctx)
        if kind == "double_click" and button != "left":
            raise _Reject("double clicks use the left button only")
        x, y = ctx.point_or_pointer(p.get("x"), p.get("y"), kind)
        if kind == "double_click":
            ctx.repair("CLICK with num_clicks 2 read as double_click")
            return Action("double_click", x=x, y=y)
        return Action("click", x=x, y=y, button=button)
    assert kind is not None
    _check_allowed(kind, ctx)
    if at == "FAIL":
        ctx.repair("agent declared failure (FAIL) -> done")
        return Action("done")
    if at == "DONE":
        return Action("done")
    if at in ("MOVE_TO", "RIGHT_CLICK", "DOUBLE_CLICK"):
        x, y = ctx.point_or_pointer(p.get("x"), p.get("y"), kind)
        if at == "RIGHT_CLICK":
            return Action("click", x=x, y=y, button="right")
        return Action(kind, x=x, y=y)
    if at == "DRAG_TO":
        if p.get("x") is None or p.get("y") is None:
            raise _Reject("DRAG_TO needs x and y of the end point")
        if "start" in p:
            sx, sy = _pair(p["start"], "start")
            x, y = ctx.point(sx, sy)
        else:
            if ctx.state is None or ctx.state.pointer is None:
                raise _Reject("DRAG_TO drags from the current pointer, which is unknown; "
                              "MOVE_TO the start point first or give \"start\": [x, y]")
            x, y = ctx.pointer("drag start")
        x2, y2 = ctx.point(p["x"], p["y"])
        return Action("drag", x=x, y=y, x2=x2, y2=y2)
    if at == "SCROLL":
        dx = p.get("dx", 0) or 0
        dy = p.get("dy", 0) or 0
        if dy == 0:
            if dx:
                raise _Reject("horizontal scroll (dx) is not supported; use dy (+ up, - down)")
            raise _Reject("SCROLL needs a non-zero dy (+ up, - down)")
        if dx:
            ctx.repair("ignored horizontal scroll dx")
        clicks = _check_clicks(dy, ctx)
        ctx.repair("converted computer_13 dy (+ is up) to clicks (+ is down)")
        x, y = ctx.point_or_pointer(p.get("x"), p.get("y"), "scroll")
        return Action("scroll", x=x, y=y, clicks=-clicks)
    if at == "TYPING":
        return Action("type", text=_check_text(p.get("text"), ctx))
    if at == "PRESS":
        if "key" not in p:
            raise _Reject("PRESS needs \"key\", e.g. {\"action_type\": \"PRESS\", "
                          "\"parameters\": {\"key\": \"enter\"}}")
        return Action("key", key=_key_from_value(p["key"], ctx))
    if at == "HOTKEY":
        keys = p.get("keys")
        if not isinstance(keys, (list, tuple)) or not keys:
            raise _Reject("HOTKEY needs \"keys\": a list such as [\"ctrl\", \"a\"]")
        return Action("key", key=_key_from_value(list(keys), ctx, list_is_native=True))
    # WAIT
    secs = p.get("seconds", p.get("time", p.get("duration")))
    return Action("wait", seconds=_check_seconds(secs, ctx))


# --------------------------------------------------------------------------------------------
# Format 3: pyautogui calls (ast only, never executed)

_PYA_FUNCS = ("click", "rightClick", "doubleClick", "moveTo", "dragTo", "scroll", "write",
              "typewrite", "press", "hotkey")
_PYA_UNSUPPORTED_MSG = ("only one pyautogui call with literal arguments is accepted: "
                        + ", ".join(f"pyautogui.{f}" for f in _PYA_FUNCS))
_PYA_SIGS = {  # positional parameter names, then accepted keyword-only extras
    "click": (("x", "y", "clicks", "interval", "button", "duration"), ()),
    "rightClick": (("x", "y", "interval", "duration"), ()),
    "doubleClick": (("x", "y", "interval", "button", "duration"), ()),
    "moveTo": (("x", "y", "duration"), ()),
    "dragTo": (("x", "y", "duration", "button"), ("mouseDownUp",)),
    "scroll": (("clicks", "x", "y"), ()),
    "write": (("message", "interval"), ()),
    "typewrite": (("message", "interval"), ()),
    "press": (("keys", "presses", "interval"), ()),
}
_PYA_TIMING = {"duration", "interval", "tween", "logScreenshot", "_pause"}


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except Exception:  # noqa: BLE001 - any non-literal is a rejection
        raise _Reject("pyautogui arguments must be literal values (numbers, strings, lists); "
                      "no names, expressions or calls") from None


def _pyautogui_call(tree: ast.Module, ctx: _Ctx) -> ast.Call:
    """The single pyautogui call of a parsed module, or a rejection."""
    body = list(tree.body)
    imports = [s for s in body if isinstance(s, ast.Import)
               and all(a.name == "pyautogui" and a.asname is None for a in s.names)]
    if imports:
        ctx.repair("ignored 'import pyautogui'")
        body = [s for s in body if s not in imports]
    if not body:
        raise _Reject(_PYA_UNSUPPORTED_MSG)
    if len(body) > 1:
        raise _Reject("one action per step: send a single pyautogui call and no other statements")
    stmt = body[0]
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        raise _Reject(_PYA_UNSUPPORTED_MSG)
    call = stmt.value
    fn = call.func
    if not (isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name)
            and fn.value.id == "pyautogui"):
        raise _Reject(_PYA_UNSUPPORTED_MSG)
    if fn.attr in ("mouseDown", "mouseUp", "keyDown", "keyUp"):
        raise _Reject(f"pyautogui.{fn.attr} is not supported (no held buttons or keys); use one "
                      f"of: {', '.join('pyautogui.' + f for f in _PYA_FUNCS)}")
    if fn.attr not in _PYA_FUNCS:
        raise _Reject(f"pyautogui.{fn.attr} is not supported; {_PYA_UNSUPPORTED_MSG}")
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None
                                                                for k in call.keywords):
        raise _Reject("pyautogui arguments must be written out; * and ** unpacking is not "
                      "accepted")
    return call


def _from_pyautogui(call: ast.Call, ctx: _Ctx) -> Action:
    fn = call.func.attr  # type: ignore[attr-defined]
    args = [_literal(a) for a in call.args]
    kwargs = {k.arg: _literal(k.value) for k in call.keywords}

    if fn == "hotkey":
        if kwargs:
            extra = sorted(k for k in kwargs if k not in _PYA_TIMING)
            if extra:
                raise _Reject(f"pyautogui.hotkey does not take {', '.join(extra)}")
            ctx.repair("ignored timing arguments")
        if not args or not all(isinstance(a, str) for a in args):
            raise _Reject("pyautogui.hotkey needs key names, e.g. pyautogui.hotkey('ctrl', 'a')")
        kind = "key"
        _check_allowed(kind, ctx)
        return Action("key", key=_key_from_value(args, ctx, list_is_native=True))

    names, kwonly = _PYA_SIGS[fn]
    if len(args) > len(names):
        raise _Reject(f"pyautogui.{fn} got too many arguments")
    bound: dict[str, Any] = dict(zip(names, args))
    for k, v in kwargs.items():
        if k in bound:
            raise _Reject(f"pyautogui.{fn} got {k} twice")
        if k not in names and k not in kwonly and k not in _PYA_TIMING:
            raise _Reject(f"pyautogui.{fn} does not take {k!r}")
        bound[k] = v
    # pyautogui accepts click((x, y)): a pair as the first argument
    if fn != "scroll" and isinstance(bound.get("x"), (list, tuple)) and "y" not in bound:
        bound["x"], bound["y"] = _pair(bound["x"], "x")
    timing = sorted(k for k in bound if k in _PYA_TIMING or k in kwonly)
    if timing:
        ctx.repair(f"ignored timing argument(s): {', '.join(timing)}")

    if fn in ("click", "rightClick", "doubleClick"):
        clicks = bound.get("clicks", 1)
        if fn == "doubleClick":
            clicks = 2
        if isinstance(clicks, bool) or clicks not in (1, 2):
            raise _Reject("clicks must be 1 or 2")
        button = "right" if fn == "rightClick" else _check_button(bound.get("button", "left"))
        kind = "double_click" if clicks == 2 else "click"
        _check_allowed(kind, ctx)
        if kind == "double_click" and button != "left":
            raise _Reject("double clicks use the left button only")
        x, y = ctx.point_or_pointer(bound.get("x"), bound.get("y"), kind)
        if kind == "double_click":
            if fn == "click":
                ctx.repair("click with clicks=2 read as double_click")
            return Action("double_click", x=x, y=y)
        return Action("click", x=x, y=y, button=button)
    if fn == "moveTo":
        _check_allowed("move", ctx)
        x, y = ctx.point_or_pointer(bound.get("x"), bound.get("y"), "move")
        return Action("move", x=x, y=y)
    if fn == "dragTo":
        _check_allowed("drag", ctx)
        if "button" in bound and _check_button(bound["button"]) != "left":
            raise _Reject("drag uses the left button only")
        if bound.get("x") is None or bound.get("y") is None:
            raise _Reject("pyautogui.dragTo needs x and y of the end point")
        if ctx.state is None or ctx.state.pointer is None:
            raise _Reject("pyautogui.dragTo drags from the current pointer, which is unknown; "
                          "pyautogui.moveTo the start point first")
        x, y = ctx.pointer("drag start")
        x2, y2 = ctx.point(bound["x"], bound["y"])
        return Action("drag", x=x, y=y, x2=x2, y2=y2)
    if fn == "scroll":
        _check_allowed("scroll", ctx)
        if "clicks" not in bound:
            raise _Reject("pyautogui.scroll needs clicks (+ up, - down)")
        clicks = _check_clicks(bound["clicks"], ctx)
        ctx.repair("converted pyautogui scroll (+ is up) to clicks (+ is down)")
        x, y = ctx.point_or_pointer(bound.get("x"), bound.get("y"), "scroll")
        return Action("scroll", x=x, y=y, clicks=-clicks)
    if fn in ("write", "typewrite"):
        _check_allowed("type", ctx)
        msg = bound.get("message")
        if isinstance(msg, (list, tuple)):
            raise _Reject(f"pyautogui.{fn} needs a string; press keys with pyautogui.press")
        return Action("type", text=_check_text(msg, ctx))
    # press
    _check_allowed("key", ctx)
    presses = bound.get("presses", 1)
    if isinstance(presses, bool) or presses != 1:
        raise _Reject("one key press per step: use presses=1")
    keys = bound.get("keys")
    if isinstance(keys, (list, tuple)):
        if len(keys) != 1:
            raise _Reject("one key press per step; for a combination use pyautogui.hotkey")
        keys = keys[0]
    if not isinstance(keys, str):
        raise _Reject("pyautogui.press needs a key name, e.g. pyautogui.press('enter')")
    return Action("key", key=_key_from_value(keys, ctx))


# --------------------------------------------------------------------------------------------
# Extraction: find the one action candidate in free text

# a language tag only counts when a newline follows it ("```pyautogui.click(1,2)```" has none)
_FENCE = re.compile(r"```(?:[ \t]*[A-Za-z0-9_+-]+[ \t]*\n|[ \t]*\n?)(.*?)```", re.S)
_WORDS = {"done": "done", "fail": "done", "wait": "wait", "finish": "done", "finished": "done"}


def _object_candidates(text: str) -> list[str]:
    """Balanced {...} substrings (quote-aware), in order of their opening brace."""
    out: list[str] = []
    starts = [m.start() for m in re.finditer(r"\{", text)][:_MAX_OBJECT_STARTS]
    covered_until = -1
    for s in starts:
        if s < covered_until:
            continue  # inside an earlier candidate
        depth, quote, esc = 0, "", False
        for i in range(s, len(text)):
            c = text[i]
            if quote:
                if esc:
                    esc = False
                elif c == "\\":
                    esc = True
                elif c == quote:
                    quote = ""
            elif c in "\"'":
                quote = c
            elif c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    out.append(text[s:i + 1])
                    covered_until = i + 1
                    break
    return out


def _load_object(candidate: str) -> tuple[Any, bool]:
    """(value, python_style) of one candidate; value None when it is neither JSON nor a literal."""
    try:
        return json.loads(candidate), False
    except (ValueError, RecursionError):
        pass
    try:
        return ast.literal_eval(candidate), True
    except Exception:  # noqa: BLE001 - not a literal: not an object
        return None, False


def _is_action_dict(d: Any) -> bool:
    return isinstance(d, dict) and any(k in d for k in ("action", "action_type", "type"))


def _dispatch_dict(d: dict[str, Any], ctx: _Ctx) -> tuple[Action, str]:
    if "action_type" in d:
        ctx.source = "computer_13"
        return _from_computer13(d, ctx), "computer_13"
    if isinstance(d.get("action"), dict) and _is_action_dict(d["action"]):
        others = sorted(k for k in d if k != "action")
        ctx.repair("unwrapped nested \"action\" object"
                   + (f"; ignored {', '.join(others)}" if others else ""))
        return _dispatch_dict(d["action"], ctx)
    ctx.source = "json"
    if "action" in d:
        return _from_project_json(d, "action", ctx), "json"
    if isinstance(d.get("type"), str):
        ctx.repair("used \"type\" as the action field (use \"action\")")
        return _from_project_json(d, "type", ctx), "json"
    raise _Reject(f"the JSON has no \"action\" field; expected JSON like {EXAMPLE}")


def _try_python(code: str) -> ast.Module | None:
    try:
        return ast.parse(code, mode="exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None


def _looks_like_call(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.Call) for n in ast.walk(tree))


def _parse_text(text: str, ctx: _Ctx) -> tuple[Action, str]:
    body = text
    fences = _FENCE.findall(text)
    if fences:
        body = fences[0].strip()
        if body != text:
            ctx.repair("extracted the action from a ``` code block")
        if len(fences) > 1:
            ctx.repair("used the first of several code blocks")

    # A whole-body JSON value
    try:
        whole = json.loads(body)
    except (ValueError, RecursionError):
        whole = None
    if isinstance(whole, list):
        if len(whole) == 1 and isinstance(whole[0], dict):
            ctx.repair("unwrapped a one-element list")
            whole = whole[0]
        elif sum(isinstance(v, dict) for v in whole) > 1:
            raise _Reject("one action per step: send a single JSON object, not a list")
    if isinstance(whole, dict):
        return _dispatch_dict(whole, ctx)
    if isinstance(whole, str) and whole.strip().lower() in _WORDS:
        body = whole.strip()

    # A bare word: DONE / FAIL / WAIT (OSWorld's special answers)
    word = body.strip().strip(".`'\"").strip().lower()
    if word in _WORDS:
        ctx.source = "word"
        if word == "fail":
            _check_allowed("done", ctx)
            ctx.repair("agent declared failure (FAIL) -> done")
            return Action("done"), "word"
        kind = _WORDS[word]
        _check_allowed(kind, ctx)
        if kind == "wait":
            return Action("wait", seconds=_check_seconds(None, ctx)), "word"
        return Action("done"), "word"

    # pyautogui code as the whole body
    tree = _try_python(body)
    if tree is not None and _looks_like_call(tree):
        if "pyautogui" in body or not _object_candidates(body):
            ctx.source = "pyautogui"
            return _from_pyautogui(_pyautogui_call(tree, ctx), ctx), "pyautogui"

    # A JSON (or Python-literal) object inside prose
    candidates = _object_candidates(body)
    objs = [(c, *_load_object(c)) for c in candidates]
    objs = [o for o in objs if isinstance(o[1], dict)]
    chosen = next((o for o in objs if _is_action_dict(o[1])), objs[0] if objs else None)
    if chosen is not None:
        text_of, obj, python_style = chosen
        if body.strip() != text_of.strip():
            ctx.repair("extracted the first action object from surrounding text")
        if python_style:
            ctx.repair("parsed a Python-style dict (use JSON with double quotes)")
        return _dispatch_dict(obj, ctx)

    # A pyautogui line inside prose
    fragments = []
    for line in body.splitlines():
        idx = line.find("pyautogui.")
        if idx >= 0:
            fragments.append(line[idx:].strip().rstrip(" .`;"))
    calls = [(f, t) for f, t in ((f, _try_python(f)) for f in fragments)
             if t is not None and _looks_like_call(t)]
    if fragments:
        ctx.source = "pyautogui"
    if len(calls) > 1:
        raise _Reject("one action per step: send a single pyautogui call")
    if calls:
        ctx.repair("extracted the pyautogui call from surrounding text")
        return _from_pyautogui(_pyautogui_call(calls[0][1], ctx), ctx), "pyautogui"
    if fragments:
        raise _Reject(f"could not read the pyautogui call {_short(fragments[0], 60)}; "
                      "write e.g. pyautogui.click(640, 400)")

    if tree is not None and _looks_like_call(tree):
        ctx.source = "pyautogui"
        raise _Reject(_PYA_UNSUPPORTED_MSG)
    raise _Reject(f"could not parse an action from the response; expected JSON like {EXAMPLE}")


# --------------------------------------------------------------------------------------------
# Entry point


def parse_action(raw: str, profile: ActionProfile, screen: tuple[int, int], *,
                 coord_scale: str = "pixels", state: ParserState | None = None) -> ParseResult:
    """Parse, normalize and validate one agent response. Never raises on agent text.

    `screen` is (width, height) in pixels. `coord_scale` is "pixels" or "norm1000" (the agent
    answers on a 0-1000 grid in both axes). `state` supplies the current pointer for actions that
    act "from here" (see ParserState); the caller updates it with `state.observe(action)` after
    executing. Raises ValueError only for a bad `coord_scale` or `screen` (caller errors).
    """
    if coord_scale not in ("pixels", "norm1000"):
        raise ValueError(f"coord_scale must be 'pixels' or 'norm1000', got {coord_scale!r}")
    w, h = screen
    if not (isinstance(w, int) and isinstance(h, int) and w > 0 and h > 0):
        raise ValueError(f"screen must be (width, height) positive ints, got {screen!r}")
    ctx = _Ctx(profile, (w, h), coord_scale, state)
    if raw is None or not isinstance(raw, str) or raw.strip() == "":
        return ParseResult(None, [], f"empty response; answer with one action as JSON, e.g. {EXAMPLE}")
    if len(raw) > MAX_RAW_CHARS:
        return ParseResult(None, [], f"response too long ({len(raw)} characters); answer with "
                                     f"one short action, e.g. {EXAMPLE}")
    try:
        with warnings.catch_warnings():  # agent text may hold bad escapes: not our warnings
            warnings.simplefilter("ignore")
            action, source = _parse_text(raw.strip(), ctx)
    except _Reject as exc:
        return ParseResult(None, ctx.repairs, str(exc), ctx.source)
    except Exception as exc:  # noqa: BLE001 - a parser bug must not crash the episode
        return ParseResult(None, ctx.repairs, f"internal error while parsing the action "
                                              f"({type(exc).__name__}); send a plain JSON action "
                                              f"like {EXAMPLE}")
    return ParseResult(action, ctx.repairs, None, source)
