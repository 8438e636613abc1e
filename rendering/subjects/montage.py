"""A picture of a subject: orthogonal CT-like slices, a label overlay and landmarks (matplotlib Agg)."""
from __future__ import annotations

from pathlib import Path

import numpy as np


def _label_colours(n: int) -> np.ndarray:
    rng = np.random.default_rng(7)
    c = rng.uniform(0.25, 1.0, size=(n, 3))
    c[0] = 0
    return c


def render_montage(rt, out: str | Path, landmarks: dict | None = None, axial_z: list[float] | None = None,
                   dpi: int = 80) -> Path:
    """Write a PNG montage: coronal + sagittal (CT window) and axial slices at key levels,
    top row in CT grey levels, bottom row with label colours; landmarks as red dots."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lab = rt.labels
    hu = rt.ct_hu_lut()[lab]
    nz, ny, nx = lab.shape
    sx, sy, sz = rt.spacing_mm
    ox, oy, oz = rt.origin_mm
    X, Y, Zc = rt.world_x(), rt.world_y(), rt.world_z()
    body = lab > 0
    jc = int(np.clip(np.median(np.nonzero(body.any(axis=(0, 2)))[0]), 0, ny - 1))
    if landmarks and "mitral_valve_centre" in landmarks:
        jc = int(np.clip(round((landmarks["mitral_valve_centre"][1] - oy) / sy), 0, ny - 1))
    ic = nx // 2
    if axial_z is None:
        zt, zb = Zc[-1], Zc[0]
        axial_z = list(np.linspace(zb + 0.08 * (zt - zb), zt - 0.08 * (zt - zb), 6))
        if landmarks:
            keys = ["lung_apex_left", "carina", "mitral_valve_centre", "liver_dome", "kidney_left_hilum",
                    "kidney_right_lower_pole", "bladder_centre", "femoral_head_left"]
            sel = [float(landmarks[k][2]) for k in keys if k in landmarks]
            if len(sel) >= 4:
                axial_z = sel
    axial_z = list(axial_z)[:8]
    fig = plt.figure(figsize=(19, 9.6), dpi=dpi)
    gs = fig.add_gridspec(2, 7, width_ratios=[1.15, 1.15, 0.85, 1, 1, 1, 1])
    col = _label_colours(int(lab.max()) + 1)
    win = lambda a: np.clip((a + 160) / 400.0, 0, 1)  # noqa: E731  W400/L40
    lms = landmarks or {}

    def show(ax, img, extent, title, rgb=False):
        ax.imshow(img if rgb else win(img), cmap=None if rgb else "gray", extent=extent, origin="lower",
                  interpolation="bilinear" if not rgb else "nearest", aspect="equal")
        ax.set_title(title, fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])

    ext_cor = [X[0], X[-1], Zc[0], Zc[-1]]
    for c_, rgb in ((0, False), (1, True)):
        ax = fig.add_subplot(gs[:, c_])
        show(ax, col[lab[:, jc, :]] if rgb else hu[:, jc, :], ext_cor,
             f"coronal y={Y[jc]:.0f} ({'labels' if rgb else 'CT W400/L40'}; patient left at right)", rgb=rgb)
        for k, p in lms.items():
            if abs(p[1] - Y[jc]) < 30:
                ax.plot(p[0], p[2], "r.", ms=4)
        for zz in axial_z:
            ax.axhline(zz, color="y", lw=0.4)
    ax = fig.add_subplot(gs[:, 2])
    show(ax, hu[:, :, ic][:, ::-1], [Y[-1], Y[0], Zc[0], Zc[-1]], "sagittal x=0 (anterior at right)")
    for k, p in lms.items():
        if abs(p[0]) < 25:
            ax.plot(p[1], p[2], "r.", ms=4)
    for c_, zz in enumerate(axial_z):
        kk = int(np.clip(round((zz - oz) / sz), 0, nz - 1))
        ax = fig.add_subplot(gs[c_ // 4, 3 + c_ % 4])
        # radiological display: anterior up, patient left on the image right (x increasing)
        show(ax, hu[kk][::-1], [X[0], X[-1], -Y[-1], -Y[0]], f"axial z={Zc[kk]:.0f}")
        for k, p in lms.items():
            if abs(p[2] - Zc[kk]) < 3:
                ax.plot(p[0], -p[1], "r.", ms=5)
    fig.suptitle(f"subject {rt.id} v{rt.version}  (LPS mm; z=0 jugular notch, y=0 table top)", fontsize=10)
    fig.tight_layout()
    out = Path(out)
    fig.savefig(out)
    plt.close(fig)
    return out
