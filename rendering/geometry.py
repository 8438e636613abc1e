"""Acquisition geometry shared by consoles, oracles and solvers (pure numpy: no Qt, no VTK).

One place for the frames an acquisition is described in, so the console that acquires, the
oracle that scores and the solver that plans can never disagree:

- the CT table frame: table z = subject z - laser z + patient shift (+ the breath-hold displacement
  below the apices, see TableFrame); the isocentre lies at subject y = table height - iso height
  (subject frame: y = 0 at the table top, body at y < 0);
- helical timing: table feed = pitch x collimation / rotation time; the table reaches a z
  position (start - z) / feed seconds after the scan starts.

Plane poses, oblique reslicing and plane/box intersections for MR planning and ultrasound are
added here too (see the foundation issue), never re-derived in a console or an oracle.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

MIN_HELICAL_SECONDS = 0.5


@dataclass(frozen=True)
class TableFrame:
    """Where the subject lies on the CT table (all millimetres).

    Breath-hold (issue 21): the subject volume is one breath-hold; in this episode the patient held
    `breath_hold_mm` higher (+, shallower) or lower (-, deeper) at the diaphragm dome. Everything at or
    below the dome (`breath_dome_z_mm`, subject z: liver, kidneys, lung bases) moves that far along z,
    nothing above `breath_fixed_z_mm` (the apices, shoulders) moves, and the chest between is stretched
    linearly: a monotonic piecewise-linear z warp, exact in both directions.
    """

    laser_z_subject_mm: float = 0.0  # subject z where the positioning laser was set (jugular notch)
    patient_shift_mm: float = 0.0  # seeded positioning error along the table
    iso_height_mm: float = 270.0  # isocentre above the lowest table position
    # Added for issue 21 (defaults keep older dumps and callers unchanged): the mattress and positioning pads
    # under the patient's back lift the subject frame (y = 0 at the back) this far above the couch top, and
    # the patient lies this far to its left (+x) of the couch midline (the gantry's x = 0).
    pad_mm: float = 0.0
    lateral_offset_mm: float = 0.0
    breath_hold_mm: float = 0.0  # dome displacement of this episode's breath-hold (+ = superior)
    breath_fixed_z_mm: float = 0.0  # subject z at and above which the breath-hold moves nothing
    breath_dome_z_mm: float = -200.0  # subject z at and below which it moves everything by breath_hold_mm

    def __post_init__(self) -> None:
        if self.breath_hold_mm and not (self.breath_fixed_z_mm - self.breath_dome_z_mm > abs(self.breath_hold_mm)):
            raise ValueError("breath-hold warp: the dome must lie further below the fixed level than it moves")

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> "TableFrame":
        """The frame a CT state dump records under "frame"."""
        f = state["frame"]
        return cls(float(f["laser_z_subject_mm"]), float(f["patient_shift_mm"]), float(f["iso_height_mm"]),
                   float(f.get("pad_mm", 0.0)), float(f.get("lateral_offset_mm", 0.0)),
                   float(f.get("breath_hold_mm", 0.0)), float(f.get("breath_fixed_z_mm", 0.0)),
                   float(f.get("breath_dome_z_mm", -200.0)))

    def breath_displacement(self, subject_z: float | np.ndarray) -> float | np.ndarray:
        """How far the breath-hold moves subject z along the table (0 above the fixed level, the full
        breath_hold_mm at and below the dome, linear between)."""
        span = self.breath_fixed_z_mm - self.breath_dome_z_mm
        w = np.clip((self.breath_fixed_z_mm - np.asarray(subject_z, dtype=float)) / span, 0.0, 1.0)
        d = self.breath_hold_mm * w
        return float(d) if np.ndim(d) == 0 else d

    def table_z(self, subject_z: float | np.ndarray) -> float | np.ndarray:
        rigid = subject_z - self.laser_z_subject_mm + self.patient_shift_mm
        if not self.breath_hold_mm:
            return rigid
        return rigid + self.breath_displacement(subject_z)

    def subject_z(self, table_z: float | np.ndarray) -> float | np.ndarray:
        rigid = table_z + self.laser_z_subject_mm - self.patient_shift_mm
        if not self.breath_hold_mm:
            return rigid
        # invert the warp on its breakpoints (rigid z of the fixed level and of the displaced dome)
        zf, zd, b = self.breath_fixed_z_mm, self.breath_dome_z_mm, self.breath_hold_mm
        z = np.interp(np.asarray(rigid, dtype=float), [zd + b, zf], [zd, zf])
        z = np.where(rigid >= zf, rigid, np.where(rigid <= zd + b, rigid - b, z))
        return float(z) if np.ndim(z) == 0 else z

    def rigid_subject_z(self, table_z: float | np.ndarray) -> float | np.ndarray:
        """Subject z at table z for what the breath-hold never moves, the skeleton (issue 33): the rigid frame
        alone, without the breath-hold warp (the scouts and the axial images both image bones here)."""
        return table_z + self.laser_z_subject_mm - self.patient_shift_mm

    def y_iso_subject(self, table_height_mm: float) -> float:
        """Subject y of the gantry isocentre at this table height."""
        return table_height_mm - self.iso_height_mm + self.pad_mm

    def table_height_for(self, y_iso_subject: float) -> float:
        """Table height that puts the isocentre at this subject y."""
        return y_iso_subject + self.iso_height_mm - self.pad_mm

    def couch_y(self, subject_y: float | np.ndarray) -> float | np.ndarray:
        """Subject y as height against the couch top (0 at the couch top, negative above it, as subject y)."""
        return subject_y - self.pad_mm

    def gantry_x(self, subject_x: float | np.ndarray) -> float | np.ndarray:
        """Subject x as gantry x (0 on the couch midline and the isocentre)."""
        return subject_x + self.lateral_offset_mm

    def to_dict(self) -> dict[str, float]:
        return {"laser_z_subject_mm": self.laser_z_subject_mm, "patient_shift_mm": self.patient_shift_mm,
                "iso_height_mm": self.iso_height_mm, "pad_mm": self.pad_mm,
                "lateral_offset_mm": self.lateral_offset_mm, "breath_hold_mm": self.breath_hold_mm,
                "breath_fixed_z_mm": self.breath_fixed_z_mm, "breath_dome_z_mm": self.breath_dome_z_mm}


def table_feed_mm_s(pitch: float, collimation_mm: float, rotation_s: float) -> float:
    """Helical table feed in mm per second."""
    return pitch * collimation_mm / rotation_s


def helical_duration_s(length_mm: float, pitch: float, collimation_mm: float, rotation_s: float) -> float:
    """Helical acquisition time for a range of this length (never below MIN_HELICAL_SECONDS)."""
    return max(MIN_HELICAL_SECONDS, length_mm / table_feed_mm_s(pitch, collimation_mm, rotation_s))


def helical_time_at(table_z_mm: float, start_mm: float, t_start_s: float, pitch: float, collimation_mm: float,
                    rotation_s: float) -> float:
    """Simulated time at which a helical scan from `start_mm` (moving inferiorly) reaches `table_z_mm`."""
    return t_start_s + (start_mm - table_z_mm) / table_feed_mm_s(pitch, collimation_mm, rotation_s)


# ---- plane poses ------------------------------------------------------------------------------
# Subject frame: DICOM LPS millimetres (+x patient left, +y posterior, +z head).
# A plane pose is a centre and three orthonormal axes: `u` (screen right), `v` (screen up) and
# `normal` = u x (-v), i.e. DICOM's row cosine x column cosine (the column cosine points down the
# screen). The normal therefore points away from the viewer, into the screen: an axial image is
# viewed from the feet (normal +z), a coronal one from the front (normal +y), a sagittal one from
# the patient's left (normal -x). This is the radiological display convention the CT console
# already uses (patient left on the screen's right, anterior up on axial images).

_AXIS_LETTERS = ("S", "C", "T")  # main orientations by the world axis of their normal: x, y, z
_AXIS_NAMES = {"S": "sagittal", "C": "coronal", "T": "transverse"}
# Screen-up reference projected into an oblique plane to define in-plane rotation 0.
_UP_REFERENCE = {"T": (0.0, -1.0, 0.0), "C": (0.0, 0.0, 1.0), "S": (0.0, 0.0, 1.0)}
# The sign of the normal a canonical pose has (viewer side), per main orientation.
_CANONICAL_NORMAL_SIGN = {"T": 1.0, "C": 1.0, "S": -1.0}


def _unit(a: Any) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    n = float(np.linalg.norm(a))
    if n < 1e-12:
        raise ValueError("zero-length direction")
    return a / n


def cross3(a: Any, b: Any) -> np.ndarray:
    """np.cross of two float64 3-vectors, bit for bit (the same products, then the same differences),
    without np.cross's ~40 us of per-call overhead: plane normals are asked for tens of thousands of times
    per episode sweep. Anything else goes to np.cross."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape == b.shape == (3,) and a.dtype == b.dtype == np.float64:
        a0, a1, a2 = a.tolist()
        b0, b1, b2 = b.tolist()
        return np.array([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0])
    return np.cross(a, b)


@dataclass(frozen=True, eq=False)
class PlanePose:
    """A plane in the subject frame with an in-plane (u, v) millimetre coordinate system.

    `centre` is the plane point at (u, v) = (0, 0); `u` points to the screen's right, `v` up and
    `normal` = u x (-v) into the screen (see the module notes on the convention).
    """

    centre: np.ndarray
    u: np.ndarray
    v: np.ndarray

    def __post_init__(self) -> None:
        c = np.asarray(self.centre, dtype=float).reshape(3)
        u, v = _unit(self.u), np.asarray(self.v, dtype=float)
        v = _unit(v - np.dot(v, u) * u)  # Gram-Schmidt: tolerate slightly non-orthogonal input
        object.__setattr__(self, "centre", c)
        object.__setattr__(self, "u", u)
        object.__setattr__(self, "v", v)

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def from_axes(cls, centre: Any, u: Any, v: Any) -> "PlanePose":
        """From two in-plane axes (screen right, screen up); `v` is orthogonalised against `u`."""
        return cls(np.asarray(centre, float), np.asarray(u, float), np.asarray(v, float))

    @classmethod
    def from_normal(cls, centre: Any, normal: Any, inplane_deg: float = 0.0) -> "PlanePose":
        """From a normal (into the screen) and an in-plane rotation.

        Rotation 0 puts screen-up along the main orientation's reference direction projected
        into the plane (anterior for transverse planes, head for coronal and sagittal ones);
        positive angles turn the image axes counter-clockwise as seen on the screen.
        """
        n = _unit(normal)
        main = _AXIS_LETTERS[int(np.argmax(np.abs(n)))]
        ref = np.asarray(_UP_REFERENCE[main], float)
        v0 = ref - np.dot(ref, n) * n
        if np.linalg.norm(v0) < 1e-6:  # reference along the normal: cannot happen for the main axis
            raise ValueError("in-plane reference is parallel to the normal")
        v0 = _unit(v0)
        u0 = cross3(n, v0)  # u x (-v) = n  <=>  u = n x v for an orthonormal right-handed set
        t = np.deg2rad(inplane_deg)
        u = np.cos(t) * u0 + np.sin(t) * v0
        v = -np.sin(t) * u0 + np.cos(t) * v0
        return cls(np.asarray(centre, float), u, v)

    @classmethod
    def axial(cls, centre: Any = (0.0, 0.0, 0.0)) -> "PlanePose":
        """Transverse plane viewed from the feet: right = patient left (+x), up = anterior (-y)."""
        return cls.from_axes(centre, (1.0, 0.0, 0.0), (0.0, -1.0, 0.0))

    @classmethod
    def coronal(cls, centre: Any = (0.0, 0.0, 0.0)) -> "PlanePose":
        """Coronal plane viewed from the front: right = patient left (+x), up = head (+z)."""
        return cls.from_axes(centre, (1.0, 0.0, 0.0), (0.0, 0.0, 1.0))

    @classmethod
    def sagittal(cls, centre: Any = (0.0, 0.0, 0.0)) -> "PlanePose":
        """Sagittal plane viewed from the patient's left: right = posterior (+y), up = head (+z)."""
        return cls.from_axes(centre, (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "PlanePose":
        return cls.from_axes(d["centre"], d["u"], d["v"])

    # -- derived --------------------------------------------------------------------------
    @property
    def normal(self) -> np.ndarray:
        return cross3(self.u, -self.v)

    def rotation_matrix(self) -> np.ndarray:
        """3x3 with columns u, v, normal (plane -> subject directions). Its determinant is -1:
        the normal points away from the viewer; DICOM's (u, -v, normal) is the right-handed one."""
        return np.column_stack([self.u, self.v, self.normal])

    def dicom_orientation(self) -> list[float]:
        """DICOM ImageOrientationPatient: row cosine (u) then column cosine (-v)."""
        return [*map(float, self.u), *map(float, -self.v)]

    def inplane_deg(self) -> float:
        """The in-plane rotation `from_normal` would need to give this pose."""
        ref = PlanePose.from_normal(self.centre, self.normal, 0.0)
        return float(np.rad2deg(np.arctan2(np.dot(self.u, ref.v), np.dot(self.u, ref.u))))

    def to_dict(self) -> dict[str, list[float]]:
        return {"centre": [float(x) for x in self.centre], "u": [float(x) for x in self.u],
                "v": [float(x) for x in self.v], "normal": [float(x) for x in self.normal]}

    # -- points ---------------------------------------------------------------------------
    def to_subject(self, u: Any, v: Any, w: Any = 0.0) -> np.ndarray:
        """Plane (u, v) mm (and signed distance w along the normal) -> subject points (..., 3)."""
        u, v, w = (np.asarray(a, float)[..., None] for a in (u, v, w))
        return self.centre + u * self.u + v * self.v + w * self.normal

    def to_plane(self, points: Any) -> np.ndarray:
        """Subject points (..., 3) -> (..., 3) of (u, v, w): in-plane mm and signed distance."""
        d = np.asarray(points, float) - self.centre
        return np.stack([d @ self.u, d @ self.v, d @ self.normal], axis=-1)

    def distance(self, points: Any) -> np.ndarray:
        """Signed distance of subject points from the plane (positive on the normal's side)."""
        return (np.asarray(points, float) - self.centre) @ self.normal

    # -- edits ----------------------------------------------------------------------------
    def translated(self, delta: Any) -> "PlanePose":
        return PlanePose(self.centre + np.asarray(delta, float), self.u, self.v)

    def moved_in_plane(self, du: float, dv: float) -> "PlanePose":
        """Centre moved by (du, dv) in this plane's own coordinates."""
        return self.translated(du * self.u + dv * self.v)

    def rotated(self, axis: Any, deg: float, pivot: Any | None = None) -> "PlanePose":
        """Rotated by `deg` about a subject-frame axis through `pivot` (default: the centre).

        Right-handed: positive angles turn counter-clockwise when the axis points at the viewer.
        """
        from scipy.spatial.transform import Rotation

        r = Rotation.from_rotvec(_unit(axis) * np.deg2rad(deg))
        p = self.centre if pivot is None else np.asarray(pivot, float)
        return PlanePose(p + r.apply(self.centre - p), r.apply(self.u), r.apply(self.v))


def plane_angle_deg(a: PlanePose | Any, b: PlanePose | Any) -> float:
    """Angle between two planes (0-90 deg) from their normals; accepts poses or normals."""
    na = _unit(a.normal if isinstance(a, PlanePose) else a)
    nb = _unit(b.normal if isinstance(b, PlanePose) else b)
    return float(np.rad2deg(np.arccos(np.clip(abs(np.dot(na, nb)), 0.0, 1.0))))


# ---- scanner orientation text ----------------------------------------------------------------
# "T > C -23.4 > S 12.1": the normal starts on the main axis (here transverse, +z), is tilted by
# -23.4 deg towards the second axis (coronal, +y), then by 12.1 deg towards the third (sagittal,
# +x). With the main component made positive and n = (n_S, n_C, n_T) = (x, y, z):
#   n_main = cos(a) cos(b),  n_second = sin(a) cos(b),  n_third = sin(b).
# The second axis is the larger of the two remaining components. Tilts below 0.05 deg print as
# nothing ("T", "T > C -23.4"), which is how scanners show pure and single-oblique planes.

def orientation_angles(normal: Any) -> tuple[str, str, float, str, float]:
    """(main, second, tilt_deg, third, tilt_deg) of a plane normal (sign-free)."""
    n = _unit(normal)
    i_main = int(np.argmax(np.abs(n)))
    if n[i_main] < 0:
        n = -n
    rest = [i for i in range(3) if i != i_main]
    i_sec, i_third = sorted(rest, key=lambda i: (-abs(n[i]), i))
    a = float(np.rad2deg(np.arctan2(n[i_sec], n[i_main])))
    b = float(np.rad2deg(np.arcsin(np.clip(n[i_third], -1.0, 1.0))))
    return _AXIS_LETTERS[i_main], _AXIS_LETTERS[i_sec], a, _AXIS_LETTERS[i_third], b


def orientation_text(normal: PlanePose | Any, decimals: int = 1) -> str:
    """The dominant plane with tilts as a scanner shows it, e.g. "T > C -23.4 > S 12.1"."""
    n = normal.normal if isinstance(normal, PlanePose) else normal
    main, sec, a, third, b = orientation_angles(n)
    q = 10.0 ** -decimals / 2
    parts = [main]
    if abs(a) >= q or abs(b) >= q:
        parts.append(f"{sec} {a:.{decimals}f}")
    if abs(b) >= q:
        parts.append(f"{third} {b:.{decimals}f}")
    return " > ".join(parts)


def normal_from_orientation_text(text: str) -> np.ndarray:
    """Inverse of `orientation_text`: the unit normal (main component positive).

    Accepts "T", "T > C -23.4", "T > C -23.4 > S 12.1" and the long forms Tra/Cor/Sag.
    """
    parts = [p.strip() for p in text.split(">")]
    if not 1 <= len(parts) <= 3 or not parts[0]:
        raise ValueError(f"orientation text {text!r}: expected 'T', 'T > C a' or 'T > C a > S b'")

    def axis(tok: str) -> int:
        letter = tok.strip()[:1].upper()
        if letter not in _AXIS_LETTERS:
            raise ValueError(f"orientation text {text!r}: unknown axis {tok!r} (S, C or T)")
        return _AXIS_LETTERS.index(letter)

    i_main = axis(parts[0])
    tilts: list[tuple[int, float]] = []
    for p in parts[1:]:
        toks = p.split()
        if len(toks) != 2:
            raise ValueError(f"orientation text {text!r}: expected '<axis> <degrees>' in {p!r}")
        tilts.append((axis(toks[0]), float(toks[1])))
    axes_used = [i_main] + [i for i, _ in tilts]
    if len(set(axes_used)) != len(axes_used):
        raise ValueError(f"orientation text {text!r}: an axis appears twice")
    a = np.deg2rad(tilts[0][1]) if tilts else 0.0
    b = np.deg2rad(tilts[1][1]) if len(tilts) > 1 else 0.0
    n = np.zeros(3)
    n[i_main] = np.cos(a) * np.cos(b)
    if tilts:
        n[tilts[0][0]] = np.sin(a) * np.cos(b)
    if len(tilts) > 1:
        n[tilts[1][0]] = np.sin(b)
    return n


def pose_from_orientation_text(text: str, centre: Any = (0.0, 0.0, 0.0), inplane_deg: float = 0.0) -> PlanePose:
    """A pose from scanner orientation text, viewed from the side its main orientation is viewed
    from (transverse from the feet, coronal from the front, sagittal from the patient's left)."""
    n = normal_from_orientation_text(text)
    main = _AXIS_LETTERS[int(np.argmax(np.abs(n)))]
    return PlanePose.from_normal(centre, _CANONICAL_NORMAL_SIGN[main] * n, inplane_deg)


# ---- oblique reslicing -----------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class ResliceGrid:
    """Pixel centres of an image lying in a plane: row 0 at the top (highest v), columns left to
    right, the image centred on the pose centre. `u0`/`v_top` are the first pixel's plane mm, so a
    viewport shows it with set_image(pixels, u0, v_top, du, dv)."""

    pose: PlanePose
    shape: tuple[int, int]  # rows, cols
    pixel_mm: tuple[float, float]  # du, dv

    @classmethod
    def centred(cls, pose: PlanePose, fov_mm: float | tuple[float, float],
                pixel_mm: float | tuple[float, float]) -> "ResliceGrid":
        """A grid covering fov_mm (width, height) with square-ish pixels of pixel_mm."""
        fw, fh = (fov_mm, fov_mm) if np.isscalar(fov_mm) else fov_mm
        du, dv = (pixel_mm, pixel_mm) if np.isscalar(pixel_mm) else pixel_mm
        cols, rows = max(1, int(round(fw / du))), max(1, int(round(fh / dv)))
        return cls(pose, (rows, cols), (float(du), float(dv)))

    @property
    def u0(self) -> float:
        return -(self.shape[1] - 1) * self.pixel_mm[0] / 2.0

    @property
    def v_top(self) -> float:
        return (self.shape[0] - 1) * self.pixel_mm[1] / 2.0

    def placement(self) -> tuple[float, float, float, float]:
        """(u0, v_top, du, dv) for ImageViewport.set_image."""
        return self.u0, self.v_top, self.pixel_mm[0], self.pixel_mm[1]

    def uv(self) -> tuple[np.ndarray, np.ndarray]:
        """Plane coordinates of every pixel centre, each (rows, cols)."""
        us = self.u0 + self.pixel_mm[0] * np.arange(self.shape[1])
        vs = self.v_top - self.pixel_mm[1] * np.arange(self.shape[0])
        return np.meshgrid(us, vs)

    def points(self) -> np.ndarray:
        """Subject-frame points of every pixel centre (rows, cols, 3)."""
        uu, vv = self.uv()
        return self.pose.to_subject(uu, vv)


def reslice_indices(grid: ResliceGrid, origin: Any, spacing: Any) -> np.ndarray:
    """Continuous voxel indices (3, rows, cols) in (k, j, i) = (z, y, x) order of a volume stored
    as vol[z, y, x] with voxel (i, j, k) at origin + (i, j, k) * spacing (origin, spacing in x, y, z).

    The indices are affine in (row, col), so they are built from two step vectors instead of
    converting every pixel's subject point (this is what keeps a 256x256 reslice at a few ms).
    """
    o, s = np.asarray(origin, float), np.asarray(spacing, float)
    p0 = grid.pose.to_subject(grid.u0, grid.v_top)
    i0 = ((p0 - o) / s)[::-1]  # (k, j, i)
    dc = (grid.pose.u * grid.pixel_mm[0] / s)[::-1]
    dr = (-grid.pose.v * grid.pixel_mm[1] / s)[::-1]
    rows = np.arange(grid.shape[0], dtype=np.float64)
    cols = np.arange(grid.shape[1], dtype=np.float64)
    return (i0[:, None, None] + dr[:, None, None] * rows[None, :, None]
            + dc[:, None, None] * cols[None, None, :])


def reslice(volume: np.ndarray, origin: Any, spacing: Any, pose: PlanePose | ResliceGrid,
            fov_mm: float | tuple[float, float] = 256.0, pixel_mm: float | tuple[float, float] = 1.0,
            order: int = 1, cval: float = 0.0) -> np.ndarray:
    """Sample a label (order=0) or intensity (order=1) volume vol[z, y, x] on a plane.

    Returns (rows, cols) with row 0 at the top of the screen (see ResliceGrid); points outside the
    volume get `cval`. Labels keep their dtype (nearest neighbour); intensities come back float32.
    Orders above 1 spline-prefilter the whole volume first, which costs far more than the sampling.
    """
    grid = pose if isinstance(pose, ResliceGrid) else ResliceGrid.centred(pose, fov_mm, pixel_mm)
    from scipy import ndimage

    idx = reslice_indices(grid, origin, spacing)
    out_dtype = volume.dtype if order == 0 else np.float32
    # Orders 0 and 1 need no spline prefilter; skipping it also skips a float64 copy of the volume.
    return ndimage.map_coordinates(volume, idx, order=order, mode="constant", cval=cval, output=out_dtype,
                                   prefilter=order > 1)


# ---- intersections -----------------------------------------------------------------------------
def plane_plane_line(a: PlanePose, b: PlanePose, eps: float = 1e-9) -> tuple[np.ndarray, np.ndarray] | None:
    """The subject-frame line (point nearest a's centre, unit direction) where two planes meet,
    or None when they are parallel."""
    d = cross3(a.normal, b.normal)
    nd = float(np.linalg.norm(d))
    if nd < eps:
        return None
    d = d / nd
    # The point on both planes nearest a.centre: solve [n_a; n_b; d] p = [n_a.c_a, n_b.c_b, d.c_a].
    m = np.vstack([a.normal, b.normal, d])
    rhs = np.array([a.normal @ a.centre, b.normal @ b.centre, d @ a.centre])
    return np.linalg.solve(m, rhs), d


def plane_line_in_plane(display: PlanePose, other: PlanePose) -> tuple[np.ndarray, np.ndarray] | None:
    """Where `other` cuts `display`, in display (u, v) mm: (point, unit direction), or None."""
    line = plane_plane_line(display, other)
    if line is None:
        return None
    p, d = line
    return display.to_plane(p)[:2], np.array([d @ display.u, d @ display.v])


def clip_line_to_rect(point: Any, direction: Any, rect: tuple[float, float, float, float]
                      ) -> tuple[np.ndarray, np.ndarray] | None:
    """The part of an infinite 2D line inside rect (u0, u1, v0, v1), as two end points, or None."""
    p, d = np.asarray(point, float), np.asarray(direction, float)
    return _liang_barsky(p, d, rect, -np.inf, np.inf)


def clip_segment_to_rect(p0: Any, p1: Any, rect: tuple[float, float, float, float]
                         ) -> tuple[np.ndarray, np.ndarray] | None:
    """The part of segment p0-p1 inside rect (u0, u1, v0, v1) (Liang-Barsky), or None."""
    p0, p1 = np.asarray(p0, float), np.asarray(p1, float)
    return _liang_barsky(p0, p1 - p0, rect, 0.0, 1.0)


def _liang_barsky(p: np.ndarray, d: np.ndarray, rect, t0: float, t1: float):
    u0, u1, v0, v1 = rect
    for q_p, q in ((-d[0], p[0] - u0), (d[0], u1 - p[0]), (-d[1], p[1] - v0), (d[1], v1 - p[1])):
        if abs(q_p) < 1e-15:
            if q < 0:
                return None  # parallel to this edge and outside it
            continue
        t = q / q_p
        if q_p < 0:
            t0 = max(t0, t)
        else:
            t1 = min(t1, t)
        if t0 > t1:
            return None
    if not (np.isfinite(t0) and np.isfinite(t1)):
        return None
    return p + t0 * d, p + t1 * d


@dataclass(frozen=True, eq=False)
class OrientedBox:
    """A box in the subject frame: a pose (its centre and axes) and half sizes along u, v, normal.

    A slice group's slab is OrientedBox(pose, (fov_u / 2, fov_v / 2, slab_thickness / 2)); a shim
    box is one too."""

    pose: PlanePose
    half_sizes: tuple[float, float, float]

    def corners(self) -> np.ndarray:
        """The 8 corners (8, 3), index bits (u, v, n) = (4, 2, 1) for the + side."""
        h = np.asarray(self.half_sizes, float)
        signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)
        local = signs * h
        return self.pose.centre + local @ self.pose.rotation_matrix().T

    def contains(self, points: Any, tol: float = 1e-9) -> np.ndarray:
        """Which subject points lie inside the box."""
        local = np.abs(self.pose.to_plane(points))
        return np.all(local <= np.asarray(self.half_sizes, float) + tol, axis=-1)

    def volume_mm3(self) -> float:
        return float(8.0 * np.prod(self.half_sizes))

    def to_dict(self) -> dict[str, Any]:
        return {"pose": self.pose.to_dict(), "half_sizes": [float(x) for x in self.half_sizes]}


_BOX_EDGES = [(a, b) for a in range(8) for b in range(a + 1, 8) if bin(a ^ b).count("1") == 1]


def _cut_points(corners: np.ndarray, edges: list[tuple[int, int]], display: PlanePose, eps: float) -> np.ndarray:
    """Unique display-plane (u, v) points where the given edges cross (or touch) the plane."""
    local = display.to_plane(corners)
    d = local[:, 2]
    pts = [local[i, :2] for i in range(len(corners)) if abs(d[i]) <= eps]
    for a, b in edges:
        if (d[a] < -eps and d[b] > eps) or (d[a] > eps and d[b] < -eps):
            t = d[a] / (d[a] - d[b])
            pts.append(local[a, :2] + t * (local[b, :2] - local[a, :2]))
    if not pts:
        return np.zeros((0, 2))
    return np.unique(np.round(np.asarray(pts), 9), axis=0)


def box_plane_polygon(box: OrientedBox, display: PlanePose, eps: float = 1e-9) -> np.ndarray:
    """The convex polygon (k, 2) in display (u, v) mm where the displayed plane cuts the box,
    counter-clockwise on screen; empty (0, 2) when it misses. A face lying in the plane gives
    that face."""
    p = _cut_points(box.corners(), _BOX_EDGES, display, eps)
    if len(p) < 3:
        return np.zeros((0, 2))
    c = p.mean(axis=0)
    order = np.argsort(np.arctan2(p[:, 1] - c[1], p[:, 0] - c[0]))
    return p[order]


def rect_plane_segment(rect_pose: PlanePose, size_mm: tuple[float, float], display: PlanePose,
                       eps: float = 1e-9) -> tuple[np.ndarray, np.ndarray] | None:
    """Where a finite rectangle (size_mm = width, height, centred on rect_pose) cuts the displayed
    plane: a segment in display (u, v) mm, or None (a slice's line on a localizer). A rectangle
    lying in the displayed plane gives None: it is an area, not a line."""
    if plane_plane_line(display, rect_pose) is None:
        return None
    w, h = size_mm[0] / 2.0, size_mm[1] / 2.0
    corners = rect_pose.to_subject(np.array([-w, w, w, -w]), np.array([-h, -h, h, h]))
    p = _cut_points(corners, [(0, 1), (1, 2), (2, 3), (3, 0)], display, eps)
    if len(p) == 0:
        return None
    i, j = np.unravel_index(np.argmax(((p[:, None] - p[None]) ** 2).sum(-1)), (len(p), len(p)))
    return p[i], p[j]
