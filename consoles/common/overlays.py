"""Planning graphics as plain data (no Qt/VTK): items, handles with roles, hit-testing, dragging.

Image-plane coordinates: u grows to the screen's right, v grows up (millimetres in the plane the
viewport shows; see rendering.geometry.PlanePose). Builders produce an OverlaySet from model
state, viewports draw it, and the same set answers "what is under the pointer" through
`hit_test`, so what is drawn and what can be grabbed never disagree.

Items come in two kinds. Primitives a viewport draws directly: Line, Polyline, Box, Handle,
Label (and Text). Composites expand into primitives (`expand`): RotatedBox, Circle, Caliper, Ruler.
Handles carry a role (move, rotate, resize) and the item they act on; `DragController` turns a
press -> move -> release sequence on a handle or a movable body into role-specific deltas.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Iterator, Union

import numpy as np

Color = tuple[float, float, float]
Point = tuple[float, float]

YELLOW: Color = (1.0, 0.85, 0.2)
CYAN: Color = (0.3, 0.85, 1.0)
GREEN: Color = (0.35, 0.9, 0.45)
RED: Color = (1.0, 0.35, 0.3)
WHITE: Color = (0.95, 0.95, 0.95)
ORANGE: Color = (1.0, 0.6, 0.2)

ROLES = ("move", "rotate", "resize")
SPANS = ("point", "row", "column")
# how a handle is drawn ("": by its role, a circle to rotate and a square otherwise); "triangle" points along
# the handle's axis (push or pull that edge), "bar" lies across it (an edge to drag)
SHAPES = ("", "square", "circle", "diamond", "triangle", "plus", "bar")


# ---- primitives ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Line:
    name: str
    u0: float
    v0: float
    u1: float
    v1: float
    color: Color = YELLOW
    width: float = 2.0
    dashed: bool = False


@dataclass(frozen=True)
class Polyline:
    """Connected segments through `points` (plane mm); `closed` joins the last to the first."""

    name: str
    points: tuple[Point, ...]
    color: Color = YELLOW
    width: float = 2.0
    closed: bool = False
    dashed: bool = False


@dataclass(frozen=True)
class Box:
    """Axis-aligned rectangle, optionally with a translucent fill."""

    name: str
    u0: float
    v0: float
    u1: float
    v1: float
    color: Color = YELLOW
    width: float = 2.0
    fill_opacity: float = 0.0


@dataclass(frozen=True)
class Handle:
    """A grip the user drags; `size_px` is its on-screen size.

    role: what dragging it does to `target` (an item name; empty = the handle itself):
      move   - translate (along `axis` only, when given);
      rotate - turn about `pivot` (plane mm), degrees counter-clockwise on screen;
      resize - stretch along `axis` (a unit direction in the plane), mm along that axis.
    span: "point" grabs near (u, v); "row" anywhere on the horizontal line through v (an edge
    that runs across the view), "column" anywhere on the vertical line through u.
    Move and resize handles draw as squares, rotate handles as circles, unless `shape` (SHAPES) says
    otherwise; invisible ones only grab.
    """

    name: str
    u: float
    v: float
    color: Color = YELLOW
    size_px: int = 12
    role: str = "move"
    target: str = ""
    axis: Point | None = None
    pivot: Point | None = None
    span: str = "point"
    visible: bool = True
    shape: str = ""

    def __post_init__(self) -> None:
        if self.shape not in SHAPES:
            raise ValueError(f"handle {self.name!r}: shape {self.shape!r} not in {SHAPES}")
        if self.shape in ("triangle", "bar") and self.axis is None:
            raise ValueError(f"handle {self.name!r}: a {self.shape} handle needs an axis")
        if self.role not in ROLES:
            raise ValueError(f"handle {self.name!r}: role {self.role!r} not in {ROLES}")
        if self.span not in SPANS:
            raise ValueError(f"handle {self.name!r}: span {self.span!r} not in {SPANS}")
        if self.role == "resize" and self.axis is None:
            raise ValueError(f"handle {self.name!r}: a resize handle needs an axis")
        if self.role == "rotate" and self.pivot is None:
            raise ValueError(f"handle {self.name!r}: a rotate handle needs a pivot")

    @property
    def acts_on(self) -> str:
        return self.target or self.name


@dataclass(frozen=True)
class Label:
    name: str
    u: float
    v: float
    text: str
    color: Color = WHITE
    size_px: int = 14
    align: str = "left"  # left | center | right
    screen_anchored: bool = False  # if True, (u, v) are pixel offsets from the viewport's top-left
    background: bool = True


@dataclass(frozen=True)
class Text(Label):
    """A Label with a vertical anchor and a pixel offset too (Label always centres vertically on
    its point): text next to a line it labels, clear of it at any zoom."""

    valign: str = "center"  # top | center | bottom
    offset_px: Point = (0.0, 0.0)  # added after mapping to pixels (x right, y down)


# ---- composites ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class RotatedBox:
    """A rectangle centred on (cu, cv) with half sizes along its own axes, turned by angle_deg
    counter-clockwise on screen (a slab's outline, a shim box's cut, an FOV)."""

    name: str
    cu: float
    cv: float
    half_u: float
    half_v: float
    angle_deg: float = 0.0
    color: Color = YELLOW
    width: float = 2.0
    dashed: bool = False

    def axes(self) -> tuple[Point, Point]:
        """The box's own u and v directions in the plane."""
        a = math.radians(self.angle_deg)
        return (math.cos(a), math.sin(a)), (-math.sin(a), math.cos(a))

    def corners(self) -> tuple[Point, ...]:
        """Counter-clockwise from (-half_u, -half_v)."""
        (au, av), (bu, bv) = self.axes()
        out = []
        for su, sv in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
            out.append((self.cu + su * self.half_u * au + sv * self.half_v * bu,
                        self.cv + su * self.half_u * av + sv * self.half_v * bv))
        return tuple(out)

    def contains(self, u: float, v: float) -> bool:
        (au, av), (bu, bv) = self.axes()
        du, dv = u - self.cu, v - self.cv
        return abs(du * au + dv * av) < self.half_u and abs(du * bu + dv * bv) < self.half_v

    def handles(self, color: Color | None = None, rotate_offset_px: float = 24.0, px_per_mm: float = 1.0,
                size_px: int = 10) -> list[Handle]:
        """Standard grips: four edge resize handles, a rotate handle beyond the top edge."""
        c = self.color if color is None else color
        (au, av), (bu, bv) = self.axes()
        out = []
        for name, s, (xu, xv), h in (("right", 1, (au, av), self.half_u), ("left", -1, (au, av), self.half_u),
                                     ("top", 1, (bu, bv), self.half_v), ("bottom", -1, (bu, bv), self.half_v)):
            out.append(Handle(f"{self.name}.{name}", self.cu + s * h * xu, self.cv + s * h * xv, c, size_px,
                              "resize", self.name, (s * xu, s * xv)))
        r = self.half_v + rotate_offset_px / px_per_mm
        out.append(Handle(f"{self.name}.rotate", self.cu + r * bu, self.cv + r * bv, c, size_px, "rotate",
                          self.name, pivot=(self.cu, self.cv)))
        return out

    def dragged(self, delta: "DragDelta", keep_opposite_edge: bool = True) -> "RotatedBox":
        """The box after a drag delta aimed at it (move, rotate about the pivot, resize an edge)."""
        if delta.role == "move":
            return replace(self, cu=self.cu + delta.du, cv=self.cv + delta.dv)
        if delta.role == "rotate":
            pu, pv = delta.pivot if delta.pivot is not None else (self.cu, self.cv)
            a = math.radians(delta.dangle_deg)
            du, dv = self.cu - pu, self.cv - pv
            return replace(self, cu=pu + du * math.cos(a) - dv * math.sin(a),
                           cv=pv + du * math.sin(a) + dv * math.cos(a), angle_deg=self.angle_deg + delta.dangle_deg)
        (au, av), _ = self.axes()
        ax = delta.axis or (1.0, 0.0)
        along_u = abs(ax[0] * au + ax[1] * av) > 0.5
        grow = delta.damount / 2.0 if keep_opposite_edge else delta.damount
        shift = delta.damount / 2.0 if keep_opposite_edge else 0.0
        hu = max(0.0, self.half_u + grow) if along_u else self.half_u
        hv = self.half_v if along_u else max(0.0, self.half_v + grow)
        return replace(self, cu=self.cu + shift * ax[0], cv=self.cv + shift * ax[1], half_u=hu, half_v=hv)


@dataclass(frozen=True)
class Circle:
    """A circle of radius (plane mm), drawn as a closed polygon of `segments` sides."""

    name: str
    cu: float
    cv: float
    radius: float
    color: Color = YELLOW
    width: float = 2.0
    segments: int = 48
    dashed: bool = False

    def points(self) -> tuple[Point, ...]:
        n = max(3, self.segments)
        return tuple((self.cu + self.radius * math.cos(2 * math.pi * i / n),
                      self.cv + self.radius * math.sin(2 * math.pi * i / n)) for i in range(n))

    def contains(self, u: float, v: float) -> bool:
        return math.hypot(u - self.cu, v - self.cv) < self.radius


@dataclass(frozen=True)
class Caliper:
    """A distance measurement: two end points (draggable), the line and its length as text."""

    name: str
    u0: float
    v0: float
    u1: float
    v1: float
    color: Color = YELLOW
    unit: str = "mm"
    decimals: int = 1
    text_size_px: int = 13

    @property
    def length(self) -> float:
        return math.hypot(self.u1 - self.u0, self.v1 - self.v0)

    @property
    def text(self) -> str:
        return f"{self.length:.{self.decimals}f} {self.unit}"


@dataclass(frozen=True)
class Ruler:
    """A millimetre scale along one plane axis, drawn beside an image so positions read off without a drag.

    `along` "v" is a vertical scale (its base line at u = `at`), "u" a horizontal one (at v = `at`). Values run
    from `lo` to `hi` (mm of whatever the scale measures); value x sits at plane coordinate
    `origin + direction * x`, so a scale can show another quantity than the plane's own (a table height
    against a couch height). A tick every `minor`, longer ones every `major`, a number every `label_every`
    (0: `major` or twice it, whichever first leaves `min_label_gap_px` between numbers at `px_per_mm`); `side`
    -1 puts ticks and numbers left of a vertical scale or below a horizontal one, +1 right or above. `title`
    (the quantity and its unit) sits beyond the ends or the numbers: above a vertical scale's top, starting at
    its base line and running away from the numbers (a long title does not run off the margin), under a
    horizontal scale's middle. Pixel sizes are kept at any zoom through `px_per_mm`."""

    name: str
    along: str
    at: float
    lo: float
    hi: float
    px_per_mm: float
    origin: float = 0.0
    direction: float = 1.0
    minor: float = 10.0
    major: float = 50.0
    label_every: float = 0.0
    side: int = -1
    title: str = ""
    color: Color = WHITE
    text_px: int = 11
    minor_px: float = 4.0
    major_px: float = 8.0
    min_label_gap_px: float = 30.0

    def __post_init__(self) -> None:
        if self.along not in ("u", "v") or self.side not in (-1, 1):
            raise ValueError(f"ruler {self.name!r}: along {self.along!r} (u or v), side {self.side} (-1 or 1)")
        if not (self.minor > 0 and self.major >= self.minor and self.px_per_mm > 0 and self.hi >= self.lo):
            raise ValueError(f"ruler {self.name!r}: needs 0 < minor <= major, px_per_mm > 0, lo <= hi")

    def label_step(self) -> float:
        """The value step between numbers."""
        if self.label_every > 0:
            return self.label_every
        return self.major if self.major * self.px_per_mm >= self.min_label_gap_px else 2.0 * self.major

    def values(self, step: float) -> list[float]:
        """Multiples of `step` within [lo, hi] (counted in whole steps: no float drift)."""
        first, last = math.ceil(self.lo / step - 1e-9), math.floor(self.hi / step + 1e-9)
        return [round(i * step, 6) + 0.0 for i in range(first, last + 1)]

    def position(self, value: float) -> float:
        """The plane coordinate (along the scale) of a value."""
        return self.origin + self.direction * value

    def primitives(self) -> list[Item]:
        k, s = self.px_per_mm, float(self.side)
        step = self.label_step()

        def at(value: float, off_px: float) -> Point:  # (u, v) of a point off_px from the base line
            c = self.position(value)
            return (self.at + s * off_px / k, c) if self.along == "v" else (c, self.at + s * off_px / k)

        a, b = at(self.lo, 0.0), at(self.hi, 0.0)
        out: list[Item] = [Line(f"{self.name}_axis", a[0], a[1], b[0], b[1], self.color, 1.0)]
        for x in self.values(self.minor):
            major = abs(x / self.major - round(x / self.major)) < 1e-6
            p, q = at(x, 0.0), at(x, self.major_px if major else self.minor_px)
            out.append(Line(f"{self.name}_tick_{x:g}", p[0], p[1], q[0], q[1], self.color, 1.0))
        gap = self.major_px + 3.0
        for x in self.values(step):
            u, v = at(x, 0.0)
            if self.along == "v":
                out.append(Text(f"{self.name}_{x:g}", u, v, f"{x:g}", self.color, self.text_px,
                                "right" if self.side < 0 else "left", background=False, offset_px=(s * gap, 0.0)))
            else:
                out.append(Text(f"{self.name}_{x:g}", u, v, f"{x:g}", self.color, self.text_px, "center",
                                background=False, valign="top" if self.side < 0 else "bottom",
                                offset_px=(0.0, -s * gap)))
        if self.title:
            if self.along == "v":  # above the top end, running from the base line away from the numbers
                top = max(self.position(self.lo), self.position(self.hi))
                out.append(Text(f"{self.name}_title", self.at, top, self.title, self.color, self.text_px,
                                "left" if self.side < 0 else "right", background=False, valign="bottom",
                                offset_px=(-2.0 * s, -8.0)))
            else:  # under (or over) the numbers, centred on the scale
                mid = (self.position(self.lo) + self.position(self.hi)) / 2.0
                out.append(Text(f"{self.name}_title", mid, self.at, self.title, self.color, self.text_px, "center",
                                background=False, valign="top" if self.side < 0 else "bottom",
                                offset_px=(0.0, -s * (gap + self.text_px + 6.0))))
        return out


Item = Union[Line, Polyline, Box, Handle, Label, RotatedBox, Circle, Caliper, Ruler]


def expand(item: Item) -> list[Item]:
    """The primitives a composite item is drawn (and grabbed) as; primitives expand to themselves."""
    if isinstance(item, RotatedBox):
        return [Polyline(item.name, item.corners(), item.color, item.width, True, item.dashed)]
    if isinstance(item, Circle):
        return [Polyline(item.name, item.points(), item.color, item.width, True, item.dashed)]
    if isinstance(item, Ruler):
        return item.primitives()
    if isinstance(item, Caliper):
        mid_u, mid_v = (item.u0 + item.u1) / 2.0, (item.v0 + item.v1) / 2.0
        return [Line(item.name, item.u0, item.v0, item.u1, item.v1, item.color, 1.5, True),
                Handle(f"{item.name}.p0", item.u0, item.v0, item.color, 10, "move", item.name),
                Handle(f"{item.name}.p1", item.u1, item.v1, item.color, 10, "move", item.name),
                Text(f"{item.name}.text", mid_u, mid_v, item.text, item.color, item.text_size_px, "center",
                     valign="bottom", offset_px=(0.0, -6.0))]
    return [item]


@dataclass
class OverlaySet:
    """Everything drawn over one viewport's image, in drawing order (later items on top), plus
    which item bodies can be grabbed to move them."""

    items: list = field(default_factory=list)
    movable: dict[str, "Movable"] = field(default_factory=dict)

    def add(self, item: Item, movable: "Movable | None" = None) -> None:
        """Add an item; `movable` makes its body a move grip (see Movable)."""
        self.items.append(item)
        if movable is not None:
            self.movable[item.name] = movable

    def primitives(self) -> Iterator[Item]:
        for item in self.items:
            yield from expand(item)

    def handles(self) -> list[Handle]:
        return [i for i in self.primitives() if isinstance(i, Handle)]

    def find(self, name: str) -> Item | None:
        for item in self.items:
            if item.name == name:
                return item
        return None


@dataclass(frozen=True)
class Movable:
    """A body grip: pressing inside the item (a box, circle or closed polyline) or on it (a line)
    moves it. `axis` restricts the motion to one plane direction; span "row" makes a body grab at
    any u within its v extent (a range drawn across the view), "column" the converse."""

    axis: Point | None = None
    span: str = "point"


# ---- plane <-> pixel ----------------------------------------------------------------------------
@dataclass(frozen=True)
class PixelTransform:
    """Plane mm -> widget pixel (origin top-left, y down): x = ox + k u, y = oy - k v."""

    k: float
    ox: float
    oy: float

    def to_pixel(self, u: float, v: float) -> Point:
        return self.ox + self.k * u, self.oy - self.k * v

    def to_plane(self, x: float, y: float) -> Point:
        return (x - self.ox) / self.k, (self.oy - y) / self.k

    def to_dict(self) -> dict[str, float]:
        """The form the geometry export uses: x = ax u + bx, y = ay v + by."""
        return {"ax": self.k, "bx": self.ox, "ay": -self.k, "by": self.oy}


def handle_outline(h: Handle, x: float, y: float) -> list[Point]:
    """The closed outline (widget pixels, y down) a visible handle draws at (x, y): its shape (SHAPES) at its
    size; pure, so shapes are tested without a display."""
    s = h.size_px / 2.0
    shape = h.shape or ("circle" if h.role == "rotate" else "square")
    if shape == "circle":
        # the angles as np.linspace gives them: the pixels every console drew before shapes existed
        return [(x + s * np.cos(a), y + s * np.sin(a)) for a in np.linspace(0, 2 * np.pi, 16, endpoint=False)]
    if shape == "diamond":
        r = s * 1.3  # the square's area
        return [(x, y - r), (x + r, y), (x, y + r), (x - r, y)]
    if shape == "plus":
        t = s / 3.0
        return [(x - t, y - s), (x + t, y - s), (x + t, y - t), (x + s, y - t), (x + s, y + t), (x + t, y + t),
                (x + t, y + s), (x - t, y + s), (x - t, y + t), (x - s, y + t), (x - s, y - t), (x - t, y - t)]
    if shape in ("triangle", "bar"):
        ax, ay = h.axis  # plane (u, v) -> screen (x right, y down)
        n = math.hypot(ax, ay) or 1.0
        dx, dy = ax / n, -ay / n
        px, py = -dy, dx  # across the axis
        if shape == "triangle":  # the tip outwards along the axis
            return [(x + dx * s * 1.2, y + dy * s * 1.2), (x - dx * s * 0.8 + px * s, y - dy * s * 0.8 + py * s),
                    (x - dx * s * 0.8 - px * s, y - dy * s * 0.8 - py * s)]
        a, b = s * 0.45, s * 1.2  # half depth along the axis, half length across it
        return [(x + dx * a + px * b, y + dy * a + py * b), (x - dx * a + px * b, y - dy * a + py * b),
                (x - dx * a - px * b, y - dy * a - py * b), (x + dx * a - px * b, y + dy * a - py * b)]
    return [(x - s, y - s), (x + s, y - s), (x + s, y + s), (x - s, y + s)]


# ---- hit-testing --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Hit:
    """What is under the pointer: a handle, or an item body (role move)."""

    kind: str  # handle | body
    name: str  # the handle's name, or the body item's name
    role: str
    target: str
    axis: Point | None = None
    pivot: Point | None = None
    distance_px: float = 0.0


def _seg_distance(pu: float, pv: float, a: Point, b: Point) -> float:
    (au, av), (bu, bv) = a, b
    du, dv = bu - au, bv - av
    L2 = du * du + dv * dv
    t = 0.0 if L2 == 0 else max(0.0, min(1.0, ((pu - au) * du + (pv - av) * dv) / L2))
    return math.hypot(pu - (au + t * du), pv - (av + t * dv))


def _inside_polygon(u: float, v: float, pts: tuple[Point, ...]) -> bool:
    inside = False
    n = len(pts)
    for i in range(n):
        (u0, v0), (u1, v1) = pts[i], pts[(i + 1) % n]
        if (v0 > v) != (v1 > v) and u < u0 + (v - v0) * (u1 - u0) / (v1 - v0):
            inside = not inside
    return inside


def _handle_distance_px(h: Handle, u: float, v: float, k: float) -> float:
    # Distances are |plane difference| x pixels-per-mm, the formula the CT view always used.
    if h.span == "row":
        return abs(v - h.v) * k
    if h.span == "column":
        return abs(u - h.u) * k
    return math.hypot(u - h.u, v - h.v) * k


def _body_distance_px(item: Item, m: Movable, u: float, v: float, k: float) -> float | None:
    """0 inside an area item, pixel distance to a line item, None when the item has no body."""
    if isinstance(item, Box):
        lo_u, hi_u = sorted((item.u0, item.u1))
        lo_v, hi_v = sorted((item.v0, item.v1))
        in_u = m.span == "row" or lo_u < u < hi_u
        in_v = m.span == "column" or lo_v < v < hi_v
        return 0.0 if in_u and in_v else math.inf
    if isinstance(item, (RotatedBox, Circle)):
        return 0.0 if item.contains(u, v) else math.inf
    if isinstance(item, Polyline) and item.closed:
        return 0.0 if _inside_polygon(u, v, item.points) else math.inf
    if isinstance(item, Polyline):
        pts = item.points
        return min((_seg_distance(u, v, a, b) for a, b in zip(pts, pts[1:])), default=math.inf) * k
    if isinstance(item, (Line, Caliper)):
        return _seg_distance(u, v, (item.u0, item.v0), (item.u1, item.v1)) * k
    return None


def hit_test(overlays: OverlaySet, transform: PixelTransform, x: float, y: float,
             grab_px: float = 10.0) -> Hit | None:
    """The handle or movable body under widget pixel (x, y), or None.

    Handles win over bodies. Among handles within reach (grab_px, or half the handle's size if
    larger) the nearest wins; equal distances go to the one added first, so a builder lists its
    most important grips first. Bodies are tested the same way (inside an area counts as 0 px).
    """
    u, v = transform.to_plane(x, y)
    return hit_test_plane(overlays, transform.k, u, v, grab_px)


def hit_test_plane(overlays: OverlaySet, px_per_mm: float, u: float, v: float, grab_px: float = 10.0) -> Hit | None:
    """`hit_test` for a pointer already in plane mm (what viewports report), so no pixel round
    trip can move a pointer across an edge."""
    k = px_per_mm
    best: tuple[float, Hit] | None = None
    for h in overlays.handles():
        d = _handle_distance_px(h, u, v, k)
        if d <= max(grab_px, h.size_px / 2.0) and (best is None or d < best[0]):
            best = (d, Hit("handle", h.name, h.role, h.acts_on, h.axis, h.pivot, d))
    if best is not None:
        return best[1]
    for item in overlays.items:
        m = overlays.movable.get(item.name)
        if m is None:
            continue
        d = _body_distance_px(item, m, u, v, k)
        if d is not None and d <= grab_px and (best is None or d < best[0]):
            best = (d, Hit("body", item.name, "move", item.name, m.axis, None, d))
    return None if best is None else best[1]


# ---- dragging -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class DragDelta:
    """One step of a drag, in plane mm and degrees.

    `u, v` is the pointer now; `du, dv` its motion since the previous event (projected on the
    axis for axis-bound moves), `total_du, total_dv` since the press. Rotate drags report the turn
    about the pivot (`dangle_deg`, `total_angle_deg`, counter-clockwise on screen); resize drags
    the stretch along the handle's axis (`damount`, `total_amount`).
    """

    phase: str  # move | release
    hit: Hit
    u: float
    v: float
    du: float = 0.0
    dv: float = 0.0
    total_du: float = 0.0
    total_dv: float = 0.0
    dangle_deg: float = 0.0
    total_angle_deg: float = 0.0
    damount: float = 0.0
    total_amount: float = 0.0
    # a release where the last move already was: applying it again changes nothing
    repeats_last_move: bool = False

    @property
    def role(self) -> str:
        return self.hit.role

    @property
    def target(self) -> str:
        return self.hit.target

    @property
    def handle(self) -> str:
        return self.hit.name

    @property
    def axis(self) -> Point | None:
        return self.hit.axis

    @property
    def pivot(self) -> Point | None:
        return self.hit.pivot


def _angle_deg(p: Point, pivot: Point) -> float:
    return math.degrees(math.atan2(p[1] - pivot[1], p[0] - pivot[0]))


class DragController:
    """press -> move* -> release over an OverlaySet, with no Qt: a view feeds it plane
    coordinates and applies the deltas to its model."""

    def __init__(self, grab_px: float = 10.0) -> None:
        self.grab_px = grab_px
        self.hit: Hit | None = None
        self._press: Point = (0.0, 0.0)
        self._last: Point = (0.0, 0.0)
        self._moved = False  # a move was reported since the press

    @property
    def active(self) -> bool:
        return self.hit is not None

    def press(self, u: float, v: float, overlays: OverlaySet, transform: PixelTransform) -> Hit | None:
        """Start a drag on whatever is under (u, v); returns it (None: nothing grabbed)."""
        self.hit = hit_test_plane(overlays, transform.k, u, v, self.grab_px)
        self._press = self._last = (u, v)
        self._moved = False
        return self.hit

    def move(self, u: float, v: float) -> DragDelta | None:
        return self._step("move", u, v)

    def release(self, u: float, v: float) -> DragDelta | None:
        """The final delta (None when nothing was grabbed); the drag ends."""
        d = self._step("release", u, v)
        self.hit = None
        return d

    def cancel(self) -> None:
        self.hit = None

    def _step(self, phase: str, u: float, v: float) -> DragDelta | None:
        last = self._last
        d = self._delta(phase, u, v)
        if d is not None and phase == "release" and self._moved and (u, v) == last:
            d = replace(d, repeats_last_move=True)
        self._moved |= phase == "move"
        return d

    def _delta(self, phase: str, u: float, v: float) -> DragDelta | None:
        h = self.hit
        if h is None:
            return None
        (lu, lv), (pu, pv) = self._last, self._press
        self._last = (u, v)
        du, dv, tu, tv = u - lu, v - lv, u - pu, v - pv
        if h.role == "rotate":
            assert h.pivot is not None
            da = _wrap(_angle_deg((u, v), h.pivot) - _angle_deg((lu, lv), h.pivot))
            ta = _wrap(_angle_deg((u, v), h.pivot) - _angle_deg((pu, pv), h.pivot))
            return DragDelta(phase, h, u, v, du, dv, tu, tv, dangle_deg=da, total_angle_deg=ta)
        if h.role == "resize":
            assert h.axis is not None
            ax, ay = _unit2(h.axis)
            return DragDelta(phase, h, u, v, du, dv, tu, tv, damount=du * ax + dv * ay,
                             total_amount=tu * ax + tv * ay)
        if h.axis is not None:
            ax, ay = _unit2(h.axis)
            s, t = du * ax + dv * ay, tu * ax + tv * ay
            du, dv, tu, tv = s * ax, s * ay, t * ax, t * ay
        return DragDelta(phase, h, u, v, du, dv, tu, tv)


def _wrap(deg: float) -> float:
    return (deg + 180.0) % 360.0 - 180.0


def _unit2(a: Point) -> Point:
    n = math.hypot(a[0], a[1])
    if n == 0:
        raise ValueError("zero-length axis")
    return a[0] / n, a[1] / n

