"""A label grid in world millimetres and vectorised implicit primitives painted into it.

Every primitive is evaluated only inside its own bounding box, on broadcast coordinate
vectors (x along i, y along j, z along k), so a subject builds in a few seconds.
Shapes are smooth implicit functions (ellipsoids, superquadric sections, tubes made
of rounded-cone segments along splines), so boundaries do not staircase beyond the
voxel grid itself.
"""
from __future__ import annotations

from typing import Callable, Iterable

import numpy as np
from scipy.interpolate import CubicSpline

Vec = np.ndarray


class Canvas:
    """labels[k, j, i] with x = ox + i*s, y = oy + j*s, z = oz + k*s."""

    def __init__(self, origin: tuple[float, float, float], spacing: float, shape: tuple[int, int, int]):
        self.origin = np.asarray(origin, dtype=np.float64)
        self.s = float(spacing)
        self.shape = tuple(int(v) for v in shape)
        self.labels = np.zeros(self.shape, dtype=np.uint8)
        nz, ny, nx = self.shape
        self.xs = (self.origin[0] + self.s * np.arange(nx)).astype(np.float32)
        self.ys = (self.origin[1] + self.s * np.arange(ny)).astype(np.float32)
        self.zs = (self.origin[2] + self.s * np.arange(nz)).astype(np.float32)
        self._painted: dict[int, list] = {}

    # ---- boxes -------------------------------------------------------------
    def box(self, lo: Iterable[float], hi: Iterable[float]):
        """Index slices (k, j, i) covering the world box [lo, hi] (x, y, z), or None if empty."""
        lo = np.asarray(list(lo), float)
        hi = np.asarray(list(hi), float)
        i0 = np.floor((lo - self.origin) / self.s).astype(int)
        i1 = np.ceil((hi - self.origin) / self.s).astype(int) + 1
        nz, ny, nx = self.shape
        n = np.array([nx, ny, nz])
        i0 = np.clip(i0, 0, n)
        i1 = np.clip(i1, 0, n)
        if np.any(i1 <= i0):
            return None
        return (slice(i0[2], i1[2]), slice(i0[1], i1[1]), slice(i0[0], i1[0]))

    def coords(self, sl):
        """Broadcastable x (1,1,ni), y (1,nj,1), z (nk,1,1) for a box."""
        return (self.xs[sl[2]][None, None, :], self.ys[sl[1]][None, :, None], self.zs[sl[0]][:, None, None])

    # ---- painting ----------------------------------------------------------
    def paint_mask(self, label: int, sl, inside: np.ndarray, over: Iterable[int] | None = None,
                   notover: Iterable[int] | None = None, track: bool = True) -> int:
        if sl is None:
            return 0
        inside = np.broadcast_to(inside, tuple(s.stop - s.start for s in sl))
        sub = self.labels[sl]
        m = inside
        if over is not None:
            m = m & np.isin(sub, np.fromiter(over, dtype=np.int64))
        if notover is not None:
            m = m & ~np.isin(sub, np.fromiter(notover, dtype=np.int64))
        sub[m] = label
        n = int(m.sum())
        if track and n:   # voxels this label actually received (later paints may take some back)
            self._painted.setdefault(label, []).append((sl, m.copy()))
        return n

    def painted_union(self, labels: Iterable[int]):
        """(box slices, bool mask) of every voxel ever painted by any of ``labels``."""
        items = [it for lb in labels for it in self._painted.get(lb, [])]
        if not items:
            return None, None
        lo = [min(it[0][a].start for it in items) for a in range(3)]
        hi = [max(it[0][a].stop for it in items) for a in range(3)]
        box = tuple(slice(lo[a], hi[a]) for a in range(3))
        m = np.zeros(tuple(hi[a] - lo[a] for a in range(3)), bool)
        for sl, mk in items:
            m[tuple(slice(sl[a].start - lo[a], sl[a].stop - lo[a]) for a in range(3))] |= mk
        return box, m

    @property
    def primitive_count(self) -> dict[int, int]:
        """Distinct voxels each tracked label was painted into."""
        out = {}
        for k in self._painted:
            _, m = self.painted_union([k])
            out[k] = int(m.sum())
        return out

    def retention(self, labels: Iterable[int]) -> float | None:
        """Share of the voxels painted by ``labels`` that still hold one of them."""
        labels = list(labels)
        box, m = self.painted_union(labels)
        if box is None or not m.any():
            return None
        return float(np.isin(self.labels[box][m], labels).mean())

    def paint(self, label: int, lo, hi, fn: Callable, **kw) -> int:
        """Paint where fn(x, y, z) is True (bool) or <= 0 (float) inside the box."""
        sl = self.box(lo, hi)
        if sl is None:
            return 0
        x, y, z = self.coords(sl)
        v = fn(x, y, z)
        inside = v if v.dtype == bool else (v <= 0)
        return self.paint_mask(label, sl, inside, **kw)

    def ellipsoid(self, label: int, c, axes, R: np.ndarray | None = None, **kw) -> int:
        c = np.asarray(c, float)
        a = np.asarray(axes, float)
        R = np.eye(3) if R is None else np.asarray(R, float)
        ext = np.abs(R) @ a + self.s
        return self.paint(label, c - ext, c + ext, lambda x, y, z: ellipsoid_k(x, y, z, c, a, R) <= 1.0, **kw)

    def tube(self, label: int, pts, radii, step: float = 4.0, smooth: bool = True, **kw) -> np.ndarray:
        """A tube of varying radius along a (spline-smoothed) centreline; returns the sampled centreline."""
        if smooth:
            P, r = resample_curve(pts, radii, step)
        else:
            P = np.asarray(pts, float)
            r = np.broadcast_to(np.asarray(radii, float), (len(P),)).astype(float)
        sl_all = self.box(P.min(0) - r.max() - 2 * self.s, P.max(0) + r.max() + 2 * self.s)
        if sl_all is None:
            return P
        # union of rounded-cone segments on one local box (min of distances)
        x, y, z = self.coords(sl_all)
        shp = tuple(s.stop - s.start for s in sl_all)
        inside = np.zeros(shp, dtype=bool)
        off = np.array([sl_all[2].start, sl_all[1].start, sl_all[0].start])
        for a, b, ra, rb in zip(P[:-1], P[1:], r[:-1], r[1:]):
            sl = self.box(np.minimum(a, b) - max(ra, rb) - self.s, np.maximum(a, b) + max(ra, rb) + self.s)
            if sl is None:
                continue
            xx, yy, zz = self.coords(sl)
            d = segment_distance(xx, yy, zz, a, b, ra, rb)
            loc = (slice(sl[0].start - off[2], sl[0].stop - off[2]), slice(sl[1].start - off[1], sl[1].stop - off[1]),
                   slice(sl[2].start - off[0], sl[2].stop - off[0]))
            inside[loc] |= d <= 0
        self.paint_mask(label, sl_all, inside, **kw)
        return P

    def count(self, label: int) -> int:
        return int((self.labels == label).sum())


def ellipsoid_k(x, y, z, c, a, R) -> np.ndarray:
    """Normalised radius of an oriented ellipsoid (1 on the surface). R columns = local axes."""
    dx, dy, dz = x - c[0], y - c[1], z - c[2]
    acc = None
    for ax in range(3):
        q = (R[0, ax] * dx + R[1, ax] * dy + R[2, ax] * dz) / a[ax]
        acc = q * q if acc is None else acc + q * q
    return acc


def local(x, y, z, c, R):
    """Coordinates of (x, y, z) in the frame (c, R columns)."""
    dx, dy, dz = x - c[0], y - c[1], z - c[2]
    return [R[0, ax] * dx + R[1, ax] * dy + R[2, ax] * dz for ax in range(3)]


def segment_distance(x, y, z, a, b, ra, rb) -> np.ndarray:
    """Signed distance-like value to a rounded cone from a (radius ra) to b (radius rb)."""
    v = b - a
    L2 = float(v @ v) or 1e-9
    px, py, pz = x - a[0], y - a[1], z - a[2]
    t = np.clip((px * v[0] + py * v[1] + pz * v[2]) / L2, 0.0, 1.0)
    qx, qy, qz = px - t * v[0], py - t * v[1], pz - t * v[2]
    return np.sqrt(qx * qx + qy * qy + qz * qz) - (ra + t * (rb - ra))


def resample_curve(pts, radii, step: float = 4.0):
    """Cubic spline through control points (chord-length parameter), sampled every ``step`` mm."""
    P = np.asarray(pts, float)
    r = np.broadcast_to(np.asarray(radii, float), (len(P),)).astype(float)
    if len(P) < 3:
        n = max(2, int(np.ceil(np.linalg.norm(P[-1] - P[0]) / step)) + 1)
        t = np.linspace(0, 1, n)[:, None]
        return P[0] + t * (P[-1] - P[0]), r[0] + t[:, 0] * (r[-1] - r[0])
    d = np.r_[0, np.cumsum(np.linalg.norm(np.diff(P, axis=0), axis=1))]
    keep = np.r_[True, np.diff(d) > 1e-6]
    P, r, d = P[keep], r[keep], d[keep]
    cs = CubicSpline(d, P, bc_type="natural")
    n = max(2, int(np.ceil(d[-1] / step)) + 1)
    tt = np.linspace(0, d[-1], n)
    return cs(tt), np.interp(tt, d, r)


def rot_from_axes(u, v=None) -> np.ndarray:
    """Orthonormal frame with first column along u and second as close to v as possible."""
    u = np.asarray(u, float)
    u = u / np.linalg.norm(u)
    if v is None:
        v = np.array([0.0, 0.0, 1.0]) if abs(u[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    v = np.asarray(v, float) - u * float(np.dot(v, u))
    v = v / np.linalg.norm(v)
    w = np.cross(u, v)
    return np.stack([u, v, w], axis=1)


def rot_zyx(az: float = 0.0, ay: float = 0.0, ax: float = 0.0) -> np.ndarray:
    """Rotation matrix from angles (radians) about z, then y, then x (applied to local axes)."""
    cz, sz, cy, sy, cx, sx = np.cos(az), np.sin(az), np.cos(ay), np.sin(ay), np.cos(ax), np.sin(ax)
    Rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    Ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    Rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    return Rz @ Ry @ Rx
