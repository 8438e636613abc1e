"""What a multi-viewport display shows, as plain data (no Qt/VTK): part of the state dump.

A console with a viewer segment (MR localizers, ultrasound image + reference) has 1, 2 or 4
viewports, one of them active; each shows some content (a series id, a localizer, a map) with
its own window/level and its own planning-graphics mode (all slices, outer slices only, or off).
Display-only: none of this changes what is acquired, but tasks score it ("make the viewport that
shows the transverse localizer the active one", "show all slices").
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

LAYOUTS = {"1x1": 1, "1x2": 2, "2x2": 4}
GRAPHICS_MODES = ("all", "outer", "off")
MAX_VIEWPORTS = 4
MIN_WINDOW = 1e-3  # narrowest window width, in the content's units


@dataclass(frozen=True)
class ViewportContent:
    """One viewport's contents; `content` None = empty (shows its placeholder). `graphics_mode` is how
    this viewport draws the planning graphics (each viewport has its own, as on a scanner)."""

    content: str | None = None
    window: float = 400.0
    level: float = 40.0
    graphics_mode: str = "all"

    def __post_init__(self) -> None:
        _check_mode(self.graphics_mode)

    def to_dict(self) -> dict[str, Any]:
        return {"content": self.content, "window": self.window, "level": self.level,
                "graphics_mode": self.graphics_mode}


def _check_mode(mode: str) -> None:
    if mode not in GRAPHICS_MODES:
        raise ValueError(f"graphics mode {mode!r} not in {GRAPHICS_MODES}")


@dataclass
class LayoutState:
    """Layout, contents, active viewport and per-viewport graphics mode of a viewer segment.

    `graphics_mode` / `set_graphics_mode(mode)` without an index address the active viewport.

    Viewports keep their contents while hidden by a smaller layout (as scanners do), so switching
    from 4 to 1 and back restores what was there.
    """

    layout: str = "2x2"
    viewports: list[ViewportContent] = field(default_factory=lambda: [ViewportContent()] * MAX_VIEWPORTS)
    active: int = 0

    def __post_init__(self) -> None:
        self._check_layout(self.layout)
        if len(self.viewports) != MAX_VIEWPORTS:
            raise ValueError(f"a layout holds {MAX_VIEWPORTS} viewport contents, got {len(self.viewports)}")
        self._check_index(self.active)

    @property
    def graphics_mode(self) -> str:
        """The active viewport's graphics mode."""
        return self.viewports[self.active].graphics_mode

    @staticmethod
    def _check_layout(layout: str) -> None:
        if layout not in LAYOUTS:
            raise ValueError(f"layout {layout!r} not in {sorted(LAYOUTS)}")

    def _check_index(self, i: int) -> None:
        if i not in self.visible():
            raise ValueError(f"viewport {i + 1} is not shown in layout {self.layout} ({self.count} viewports)")

    @property
    def count(self) -> int:
        """How many viewports the layout shows."""
        return LAYOUTS[self.layout]

    def visible(self) -> list[int]:
        """The viewports on show: 1x1 shows the active one (a scanner maximises the viewport you
        work in, issue 24), 1x2 the active one and its neighbour in the 2x2 grid's row (1 and 2, or 3
        and 4, in their places: issue 34), 2x2 all four."""
        if self.layout == "1x1":
            return [self.active]
        if self.layout == "1x2":
            first = self.active - self.active % 2
            return [first, first + 1]
        return list(range(self.count))

    # -- edits (each validates, so a console can turn ValueError into a user-facing refusal) --
    def set_layout(self, layout: str) -> None:
        """Switch layout; the active viewport stays active and on show (1x1 shows it, 1x2 it and its
        neighbour), and no viewport's contents change."""
        self._check_layout(layout)
        self.layout = layout

    def activate(self, i: int) -> None:
        self._check_index(i)
        self.active = i

    def assign(self, i: int, content: str | None, window: float | None = None, level: float | None = None) -> None:
        """Show `content` in viewport i (display settings kept unless given)."""
        self._check_index(i)
        vc = self.viewports[i]
        self.viewports[i] = replace(vc, content=content, window=vc.window if window is None else float(window),
                                    level=vc.level if level is None else float(level))

    def move_content(self, src: int, dst: int) -> None:
        """Drag the content of one viewport into another (the source keeps its copy, as a
        scanner's drag-and-drop of a series does)."""
        self._check_index(src)
        self.assign(dst, self.viewports[src].content)

    def set_window_level(self, i: int, window: float, level: float) -> None:
        """Window and level in the content's own units: HU for CT, relative signal (about 0-1) for MR,
        so the floor is a small positive width, not 1 (a floor of 1 widened every MR window)."""
        self._check_index(i)
        self.viewports[i] = replace(self.viewports[i], window=max(MIN_WINDOW, float(window)), level=float(level))

    def set_graphics_mode(self, mode: str, i: int | None = None) -> None:
        """Graphics mode of viewport i (default: the active one)."""
        _check_mode(mode)
        i = self.active if i is None else i
        self._check_index(i)
        self.viewports[i] = replace(self.viewports[i], graphics_mode=mode)

    def set_all_graphics_modes(self, mode: str) -> None:
        """Every viewport (shown or hidden) draws the graphics this way."""
        _check_mode(mode)
        self.viewports = [replace(v, graphics_mode=mode) for v in self.viewports]

    def showing(self, content: str) -> list[int]:
        """Visible viewports that show `content`."""
        return [i for i in self.visible() if self.viewports[i].content == content]

    # -- dump ---------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """For the state dump; viewports are numbered from 1 as on screen."""
        return {"layout": self.layout, "active": self.active + 1, "graphics_mode": self.graphics_mode,
                "viewports": [dict(vc.to_dict(), index=i + 1, visible=i in self.visible())
                              for i, vc in enumerate(self.viewports)]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "LayoutState":
        default_mode = str(d.get("graphics_mode", "all"))  # older dumps: one mode for every viewport
        vps = [ViewportContent(v.get("content"), float(v.get("window", 400.0)), float(v.get("level", 40.0)),
                               str(v.get("graphics_mode", default_mode)))
               for v in d.get("viewports", [])]
        vps += [ViewportContent(graphics_mode=default_mode)] * (MAX_VIEWPORTS - len(vps))
        return cls(str(d.get("layout", "2x2")), vps, int(d.get("active", 1)) - 1)
