"""Real X input through the XTEST extension (python-xlib). xdotool is the fallback.

Every call ends with XSync, so when it returns the X server has processed (and delivered) the
events; the runner then asks the console to settle.
"""
from __future__ import annotations

import shutil
import subprocess

from Xlib import X, XK, display as xdisplay
from Xlib.ext import xtest

from runner.actions import Action, key_to_keysyms

BUTTONS = {"left": 1, "middle": 2, "right": 3}
DRAG_STEPS = 12  # intermediate motion events, so widgets see a real drag path
KEY_ALIASES = {"Enter": "Return", "ctrl": "Control_L", "shift": "Shift_L", "alt": "Alt_L", "Esc": "Escape",
               "PageUp": "Page_Up", "PageDown": "Page_Down", "Del": "Delete"}


class InputError(RuntimeError):
    """An input event could not be injected."""


class XTestInput:
    """Injects pointer and keyboard events into one X display."""

    def __init__(self, display_name: str) -> None:
        self.d = xdisplay.Display(display_name)
        if not self.d.has_extension("XTEST"):
            self.d.close()
            raise InputError(f"X display {display_name} has no XTEST extension")
        self.root = self.d.screen().root
        self._shift = self.d.keysym_to_keycode(XK.string_to_keysym("Shift_L"))

    def close(self) -> None:
        self.d.close()

    # ---- primitives ---------------------------------------------------------------------
    def move(self, x: int, y: int) -> None:
        xtest.fake_input(self.d, X.MotionNotify, x=int(x), y=int(y))

    def button(self, b: int, down: bool) -> None:
        xtest.fake_input(self.d, X.ButtonPress if down else X.ButtonRelease, b)

    def _keycode(self, name: str) -> tuple[int, bool]:
        name = KEY_ALIASES.get(name, name)
        sym = XK.string_to_keysym(name)
        if sym == 0 and len(name) == 1:
            sym = ord(name)
        if sym == 0:
            raise InputError(f"no X keysym for key {name!r}")
        code = self.d.keysym_to_keycode(sym)
        if code == 0:
            raise InputError(f"key {name!r} is not on this display's keyboard map")
        shifted = self.d.keycode_to_keysym(code, 0) != sym and self.d.keycode_to_keysym(code, 1) == sym
        return code, shifted

    def key(self, code: int, down: bool) -> None:
        xtest.fake_input(self.d, X.KeyPress if down else X.KeyRelease, code)

    def sync(self) -> None:
        self.d.sync()

    def home(self, window_id: int, pointer: tuple[int, int]) -> None:
        """Episode start: keyboard focus on the console window and the pointer at `pointer`.

        Set explicitly because what a display remembers from an earlier episode (X focus reverting
        to None or PointerRoot when the previous console exited) decides whether Qt sees its window
        as active, which shows or hides the text caret in the screenshots.
        """
        win = self.d.create_resource_object("window", int(window_id))
        win.set_input_focus(X.RevertToParent, X.CurrentTime)
        self.move(*pointer)
        self.d.sync()

    # ---- actions ------------------------------------------------------------------------
    def press_combo(self, combo: str) -> None:
        codes = [self._keycode(k) for k in key_to_keysyms(combo)]
        for code, _ in codes:
            self.key(code, True)
        for code, _ in reversed(codes):
            self.key(code, False)

    def type_text(self, text: str) -> None:
        for ch in text:
            name = _char_keysym_name(ch)
            if name is None:
                raise InputError(f"cannot type character {ch!r}")
            code, shifted = self._keycode(name)
            if shifted:
                self.key(self._shift, True)
            self.key(code, True)
            self.key(code, False)
            if shifted:
                self.key(self._shift, False)

    def perform(self, a: Action) -> None:
        """Inject one parsed action and wait until the server has processed it."""
        t = a.type
        if t in ("click", "double_click", "move", "scroll", "drag"):
            self.move(a.x, a.y)
        if t == "click":
            b = BUTTONS[a.button]
            self.button(b, True)
            self.button(b, False)
        elif t == "double_click":
            for _ in range(2):
                self.button(1, True)
                self.button(1, False)
        elif t == "drag":
            self.button(1, True)
            for i in range(1, DRAG_STEPS + 1):
                f = i / DRAG_STEPS
                self.move(round(a.x + (a.x2 - a.x) * f), round(a.y + (a.y2 - a.y) * f))
            self.button(1, False)
        elif t == "scroll":
            b = 5 if a.clicks > 0 else 4  # X buttons 4/5 = wheel up/down
            for _ in range(abs(a.clicks)):
                self.button(b, True)
                self.button(b, False)
        elif t == "type":
            self.type_text(a.text or "")
        elif t == "key":
            self.press_combo(a.key or "")
        self.sync()


def _char_keysym_name(ch: str) -> str | None:
    """X keysym name for one printable ASCII character."""
    special = {" ": "space", "-": "minus", ".": "period", ",": "comma", "+": "plus", "/": "slash",
               "_": "underscore", ":": "colon", ";": "semicolon", "=": "equal", "(": "parenleft",
               ")": "parenright", "'": "apostrophe", '"': "quotedbl", "!": "exclam", "?": "question",
               "#": "numbersign", "%": "percent", "&": "ampersand", "*": "asterisk", "@": "at",
               "[": "bracketleft", "]": "bracketright", "<": "less", ">": "greater", "$": "dollar",
               "^": "asciicircum", "~": "asciitilde", "`": "grave", "|": "bar", "\\": "backslash",
               "{": "braceleft", "}": "braceright"}
    if ch in special:
        return special[ch]
    if ch.isalnum() and ch.isascii():
        return ch
    return None


class XdotoolInput:
    """Fallback when XTEST is unavailable through python-xlib: the same actions via xdotool."""

    def __init__(self, display_name: str) -> None:
        if shutil.which("xdotool") is None:
            raise InputError("xdotool is not installed")
        self.env = {"DISPLAY": display_name, "PATH": "/usr/bin:/bin"}

    def _run(self, *args: str) -> None:
        subprocess.run(["xdotool", *args], env=self.env, check=True, timeout=10)

    def perform(self, a: Action) -> None:
        if a.type in ("click", "double_click", "move", "scroll", "drag"):
            self._run("mousemove", "--sync", str(a.x), str(a.y))
        if a.type == "click":
            self._run("click", str(BUTTONS[a.button]))
        elif a.type == "double_click":
            self._run("click", "--repeat", "2", "1")
        elif a.type == "drag":
            self._run("mousedown", "1")
            self._run("mousemove", "--sync", str(a.x2), str(a.y2))
            self._run("mouseup", "1")
        elif a.type == "scroll":
            self._run("click", "--repeat", str(abs(a.clicks)), "5" if a.clicks > 0 else "4")
        elif a.type == "type":
            self._run("type", "--", a.text or "")
        elif a.type == "key":
            self._run("key", "--", "+".join(key_to_keysyms(a.key or "")))

    def home(self, window_id: int, pointer: tuple[int, int]) -> None:
        self._run("windowfocus", "--sync", str(window_id))
        self._run("mousemove", "--sync", str(pointer[0]), str(pointer[1]))

    def close(self) -> None:
        pass


def open_input(display_name: str):
    """XTEST via python-xlib, or xdotool if that fails."""
    try:
        return XTestInput(display_name)
    except Exception:  # noqa: BLE001 - any failure here means: use the fallback
        return XdotoolInput(display_name)
