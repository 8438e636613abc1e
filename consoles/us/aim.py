"""Probe poses aimed at a kidney (pure numpy: no Qt).

The console stages tasks that start on a kidney view, and the reference planner finds the view it has to
reach, with the same construction, so neither guesses a pose per subject:

- `kidney_axes(points)`: centre and principal axes of a kidney's voxels (PCA: the first axis is the long
  axis, lower pole -> upper pole).
- `long_axis_pose(subject, centre, axis, hilum, side)`: the probe pose whose image plane contains the long
  axis and the hilum (the kidney's "coronal" plane, the standard longitudinal view from the flank), with
  the beam through the kidney's centre and the probe marker to the head. The footprint is found where that
  plane meets the skin on the patient's side; rotation, tilt and rock follow in closed form from the way
  rendering.us_image.ProbeGeometry turns the beam (rotation about the surface normal, tilt about the
  marker, rock within the image plane), so the pose reproduces the plane up to the console's rounding.
- `kidney_from_labels(subject, side)`: what the console knows of a kidney (its labels only): centre, axis
  and the hilum estimated from the renal sinus, which opens medially at the hilum.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from rendering import us_image as U

SIDES = ("left", "right")
# The footprint is looked for over the patient's side of the body: the flank and the back's lateral part.
AZIMUTH_WINDOW_DEG = (40.0, 135.0)
KIDNEY_PARTS = ("cortex", "medulla", "sinus")


def _unit(a: Any) -> np.ndarray:
    a = np.asarray(a, float)
    return a / float(np.linalg.norm(a))


def kidney_axes(points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(centre, axes (3, 3) rows = principal directions by decreasing extent, extents (3,) in mm: max - min
    of the projections). The long axis points to the head (+z)."""
    p = np.asarray(points, float)
    c = p.mean(axis=0)
    _, _, vt = np.linalg.svd(p - c, full_matrices=False)
    axes = vt.copy()
    if axes[0, 2] < 0:
        axes[0] = -axes[0]
    proj = (p - c) @ axes.T
    return c, axes, proj.max(axis=0) - proj.min(axis=0)


def kidney_from_labels(subject: Any, side: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(centre, long axis, hilum point) of one kidney from the subject's label volume: the hilum lies where
    the renal sinus (centroid offset from the kidney's) reaches the kidney's medial surface."""
    if side not in SIDES:
        raise ValueError(f"unknown kidney side {side!r}; expected one of {SIDES}")
    names = {v: k for k, v in subject.label_names.items()}
    ids = [names[f"kidney_{side}_{p}"] for p in KIDNEY_PARTS if f"kidney_{side}_{p}" in names]
    if not ids:
        raise ValueError(f"subject {subject.id} has no {side} kidney labels")
    pts = _voxels_mm(subject, ids)
    c, axes, ext = kidney_axes(pts)
    sinus = names.get(f"kidney_{side}_sinus")
    d = None
    if sinus is not None:
        sp = _voxels_mm(subject, [sinus])
        if len(sp):
            d = sp.mean(axis=0) - c
            d -= np.dot(d, axes[0]) * axes[0]
    if d is None or np.linalg.norm(d) < 1e-6:  # no sinus label: the hilum faces the body's midline
        d = np.array([-c[0], 0.0, 0.0]) - np.dot(np.array([-c[0], 0.0, 0.0]), axes[0]) * axes[0]
    d = _unit(d)
    half_width = 0.5 * float(np.ptp((pts - c) @ d))
    return c, axes[0], c + d * half_width


def _voxels_mm(subject: Any, ids: list[int]) -> np.ndarray:
    k, j, i = np.nonzero(np.isin(subject.labels, ids))
    o, s = np.asarray(subject.origin_mm, float), np.asarray(subject.spacing_mm, float)
    return np.stack([o[0] + s[0] * i, o[1] + s[1] * j, o[2] + s[2] * k], axis=1)


def pose_for_frame(subject: Any, z_mm: float, azimuth_deg: float, beam: Any, marker: Any,
                   pressure: float = 0.6) -> U.ProbePose:
    """The pose at footprint (z, azimuth) whose beam is `beam` and whose image plane contains `marker`
    (the inverse of ProbeGeometry.from_pose; the beam and marker should be orthogonal)."""
    _, n_out = U.body_surface(subject, z_mm, azimuth_deg)
    b0 = -n_out
    head = np.array([0.0, 0.0, 1.0])
    l0 = _unit(head - np.dot(head, b0) * b0)
    k0 = np.cross(l0, b0)
    b = _unit(beam)
    m_star = _unit(np.asarray(marker, float) - np.dot(marker, b) * b)
    e1 = np.cross(b, m_star)  # the image plane's normal: invariant under rock
    t = -math.asin(float(np.clip(np.dot(e1, b0), -1.0, 1.0)))
    e = (e1 + math.sin(t) * b0) / max(math.cos(t), 1e-9)
    m = np.cross(e, b0)
    theta = math.atan2(float(np.dot(m, k0)), float(np.dot(m, l0)))
    b1 = math.cos(t) * b0 + math.sin(t) * e
    rock = math.atan2(float(np.dot(b, m)), float(np.dot(b, b1)))
    return U.ProbePose(z_mm=float(z_mm), azimuth_deg=float(azimuth_deg),
                       rotation_deg=float(np.rad2deg(theta)) % 360.0, tilt_deg=float(np.rad2deg(t)),
                       rock_deg=float(np.rad2deg(rock)), pressure=pressure)


def _azimuth_in_plane(subject: Any, z_mm: float, point: np.ndarray, normal: np.ndarray, side: str,
                      guess_deg: float) -> float | None:
    """Azimuth (on the patient's `side`) where the skin at height z lies in the plane (point, normal): the
    crossing nearest `guess_deg`."""
    sgn = 1.0 if side == "left" else -1.0
    azs = sgn * np.arange(AZIMUTH_WINDOW_DEG[0], AZIMUTH_WINDOW_DEG[1] + 0.5, 1.0)
    c = U.body_centre(subject, z_mm)
    pts = U._surface_points(subject, c, np.full(len(azs), float(z_mm)), azs)
    f = (pts - point) @ normal
    idx = np.nonzero(np.sign(f[:-1]) != np.sign(f[1:]))[0]
    if len(idx) == 0:
        return None
    cands = [azs[i] + (azs[i + 1] - azs[i]) * f[i] / (f[i] - f[i + 1]) for i in idx]
    return float(min(cands, key=lambda a: abs(a - guess_deg)))


def long_axis_pose(subject: Any, centre: Any, axis: Any, hilum: Any, side: str, pressure: float = 0.6,
                   rotation_offset_deg: float = 0.0, about_axis_deg: float = 0.0) -> U.ProbePose:
    """The pose imaging the kidney along its long axis through the hilum, from the patient's `side`.

    `about_axis_deg` turns the image plane about the long axis first (positive: the footprint moves
    towards the front of the body, a more anterior window through the liver or spleen: a deeper kidney,
    the hilum out of plane); `rotation_offset_deg` then turns the probe about its beam (staging a view off
    the long axis by that much, e.g. 90 for a transverse view)."""
    c, a, hp = (np.asarray(v, float) for v in (centre, axis, hilum))
    a = _unit(a)
    h = hp - c
    h = _unit(h - np.dot(h, a) * a)
    if about_axis_deg:
        # turn h about the long axis so that -h (towards the skin) swings anteriorly (-y) for a positive
        # angle and posteriorly (+y) for a negative one (the sense of the turn that does so depends on the side)
        k = np.cross(a, h)
        mag = np.deg2rad(abs(about_axis_deg))
        towards = -1.0 if about_axis_deg > 0 else 1.0  # the sign of y the skin direction moves to
        for sgn in (1.0, -1.0):
            h2 = math.cos(sgn * mag) * h + math.sin(sgn * mag) * k
            if towards * (-h2[1] - -h[1]) > 1e-9:
                break
        h = _unit(h2)
    n = _unit(np.cross(a, h))
    out = -h  # from the hilum through the kidney towards the lateral skin
    guess = float(np.rad2deg(math.atan2(out[0], -out[1])))
    z = float(c[2])
    az = None
    for _ in range(3):  # the footprint height follows the lateral ray's slope over the depth found
        az = _azimuth_in_plane(subject, z, c, n, side, guess)
        if az is None:
            raise ValueError(f"no skin point of subject {subject.id} lies in the {side} kidney's long-axis plane")
        s, _ = U.body_surface(subject, z, az)
        lam = float(np.dot(s - c, out))
        z_new = float(c[2] + lam * out[2])
        if abs(z_new - z) < 0.5:
            break
        z = z_new
    s, _ = U.body_surface(subject, z, az)
    beam = c - s
    beam = beam - np.dot(beam, n) * n
    b = _unit(beam)
    marker = np.cross(n, b)
    if marker[2] < 0:
        marker = -marker  # marker to the head: the upper pole on the screen's left
    pose = pose_for_frame(subject, z, az, b, marker, pressure)
    if rotation_offset_deg:
        pose = replace(pose, rotation_deg=(pose.rotation_deg + rotation_offset_deg) % 360.0)
    return pose
