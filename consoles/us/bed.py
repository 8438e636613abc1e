"""The bed's frame (pure numpy: no Qt): how a probe pose in the subject frame reads on the bed's tracker.

The console's probe fields show the pose as a tracker fixed to the bed reads it (issue 21), so that the
same anatomy sits at other field values in another episode. The patient lies `patient_z_mm` along the bed,
rolled `roll_deg` about the body's long axis (+: the left side up) and turned `yaw_deg` on the bed about
its vertical (+: the head towards the bed's left, i.e. the patient's left when supine):

- height: the subject's z plus the offset along the bed;
- position around the body: the body angle minus the roll (the bed's vertical is 0);
- rotation: measured on the skin from the bed's head direction instead of the body's (both projected onto
  the skin's tangent plane at the footprint), so it depends on the footprint: on a flank that faces the
  side of the bed a yaw hardly turns it, on a flank turned up to the ceiling (lateral decubitus) it turns
  it by the whole yaw. Tilt, rock and pressure are about the probe itself and read the same.

Sign of the rotation as in rendering.us_image.ProbeGeometry: from the head direction towards the
patient's right (l0 -> k0 = l0 x beam).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from rendering import us_image as U


def bed_head_in_body(roll_deg: float, yaw_deg: float) -> np.ndarray:
    """The bed's head direction in the subject frame (LPS) for a patient rolled then turned on the bed."""
    r, y = math.radians(roll_deg), math.radians(yaw_deg)
    # body -> bed: roll about the long axis (+: +x, the left side, towards -y, the ceiling), then yaw about
    # the bed's vertical (+: the head, +z, towards the bed's +x)
    roll = np.array([[math.cos(r), math.sin(r), 0.0], [-math.sin(r), math.cos(r), 0.0], [0.0, 0.0, 1.0]])
    yaw = np.array([[math.cos(y), 0.0, math.sin(y)], [0.0, 1.0, 0.0], [-math.sin(y), 0.0, math.cos(y)]])
    return (yaw @ roll).T @ np.array([0.0, 0.0, 1.0])


def rotation_offset_deg(subject: Any, z_mm: float, azimuth_deg: float, roll_deg: float, yaw_deg: float) -> float:
    """Degrees to add to a subject-frame probe rotation at footprint (z, azimuth) to get the rotation the
    bed's tracker shows (in -180..180; 0 without a yaw)."""
    if abs(yaw_deg) < 1e-9:
        return 0.0  # a roll alone turns the body about the head direction itself
    _, n_out = U.body_surface(subject, z_mm, azimuth_deg)
    b0 = -n_out
    head = np.array([0.0, 0.0, 1.0])
    l0 = head - np.dot(head, b0) * b0
    l0 /= float(np.linalg.norm(l0))
    k0 = np.cross(l0, b0)
    h = bed_head_in_body(roll_deg, yaw_deg)
    lb = h - np.dot(h, b0) * b0
    if float(np.linalg.norm(lb)) < 1e-6:  # the bed's head straight along the beam: no direction on the skin
        return 0.0
    phi = math.degrees(math.atan2(float(np.dot(lb, k0)), float(np.dot(lb, l0))))
    return -phi  # a marker along the bed's head (body rotation phi) reads 0
