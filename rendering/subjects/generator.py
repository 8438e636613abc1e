"""Procedural torso (neck to upper thighs) from implicit primitives, with its ground truth.

Frame (DICOM LPS patient frame, millimetres): +x patient left, +y posterior, +z superior.
x = 0 is the body's left-right midline; y = 0 is the table top (the patient lies supine,
so the back rests on y = 0 and the body occupies y < 0); z = 0 is the jugular (sternal)
notch.  The grid is 2 mm isotropic; labels[k, j, i] sits at
(origin_x + 2 i, origin_y + 2 j, origin_z + 2 k).

Everything is constructed from subject parameters (params.py) with reference positions
expressed relative to vertebral levels and the body outline, so landmarks and reference
planes come from the construction itself.
"""
from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np
from scipy import ndimage
from scipy.interpolate import PchipInterpolator

from .canvas import Canvas, ellipsoid_k, local, resample_curve, rot_from_axes, rot_zyx
from .labels import L, ORGANS, VERTEBRAE
from .params import SubjectParams

from .version import GENERATOR_VERSION  # noqa: E402,F401  (one definition, cheap to import)
SPACING_MM = 2.0

# reference body profile (z relative to the jugular notch, 175 cm male)
_ZP = np.array([-590, -500, -440, -380, -300, -230, -150, -60, 0, 15, 35, 55, 110], float)
_A = np.array([168, 174, 163, 150, 155, 161, 167, 163, 150, 118, 80, 60, 58], float)      # half width
_D = np.array([196, 208, 212, 212, 218, 226, 232, 214, 176, 150, 128, 112, 110], float)   # AP depth
_LIFT = np.array([0, 0, 0, 0, 0, 0, 0, 0, 0, 6, 18, 26, 28], float)                    # back off the table
# vertebral heights incl. disc (mm, reference), C5..L5
_VH = dict(zip(VERTEBRAE, [16, 16, 16, 20, 21, 21, 22, 22, 23, 23, 24, 25, 26, 27, 28, 32, 33, 34, 34, 33]))
_T1_TOP_REF = 40.0
PERIRENAL = L["adrenal"]  # placeholder label of the perirenal space while the abdomen is painted (never shipped)
POSTERIOR_GUTTER_MM = 108.0  # posterior costophrenic recess below its dome (the lungs' lowest point 5 mm above)
#: organs whose painted voxels should survive later primitives (checked by the sanity tests)
RETENTION_ORGANS = ["lungs", "heart", "lv", "rv", "la", "ra", "aorta", "liver", "spleen", "kidney_left", "kidney_right",
                    "bladder", "stomach", "pancreas", "trachea", "pulmonary_artery", "ivc", "svc", "oesophagus",
                    "gallbladder", "portal_vein", "ureter_left", "ureter_right"]


def _fatprof(z_ref):
    """Subcutaneous fat factor along z (1 = abdomen)."""
    return np.interp(z_ref, [-590, -420, -300, -200, -60, 0, 40, 110], [0.8, 0.95, 1.0, 0.75, 0.55, 0.45, 0.3, 0.25])


class Body:
    """The body outline and its wall layers as smooth functions of z (world mm)."""

    def __init__(self, P: SubjectParams):
        self.sz = P.height_cm / 175.0
        ws = P.width_scale
        ds = P.depth_scale
        zp = _ZP * self.sz
        A = _A * ws
        if P.sex == "F":   # narrower chest, wider hips
            A = A * np.interp(_ZP, [-590, -440, -300, -150, 0, 110], [1.05, 1.05, 1.0, 0.95, 0.94, 0.92])
        self._a = PchipInterpolator(zp, A)
        self._d = PchipInterpolator(zp, _D * ds)
        self._lift = PchipInterpolator(zp, _LIFT)
        self.fat = P.fat_mm
        self.z_top = 108.0 * self.sz
        self.z_bottom = -585.0 * self.sz

    def at(self, z):
        z = np.asarray(z, float)
        zr = z / self.sz
        a = self._a(z)
        D = self._d(z)
        yb = -self._lift(z)
        b = D / 2
        yc = yb - b
        f = np.maximum(3.0, self.fat * _fatprof(zr))
        fa, fl, fp = f, 0.8 * f, 0.55 * f
        neck = np.clip((zr - 20) / 25, 0, 1)
        ma = np.interp(zr, [-590, -450, -300, -150, 0, 40], [16, 15, 12, 14, 14, 8])
        ml = np.interp(zr, [-590, -450, -300, -150, 0, 40], [22, 18, 14, 12, 12, 8])
        mp = np.interp(zr, [-590, -500, -430, -300, -150, 0, 40], [45, 42, 25, 14, 12, 12, 8])
        pa = 2.1 + 0.3 * neck
        pp = 3.0 - 0.8 * neck
        ai = a - 2 - fl - ml
        front_in = yc - (b - 2 - fa - ma)
        back_in = yc + (b - 2 - fp - mp)
        return SimpleNamespace(a=a, b=b, yc=yc, yback=yb, front=yc - b, fa=fa, fl=fl, fp=fp, ma=ma, ml=ml, mp=mp,
                               pa=pa, pp=pp, ai=ai, front_in=front_in, back_in=back_in,
                               yc_in=(front_in + back_in) / 2, b_in=(back_in - front_in) / 2)


def _inset_value(x, y, g, t_lat, t_ant, t_post):
    """Superellipse value (<= 1 inside) of the outline shrunk by per-side thicknesses."""
    yc = g.yc[:, None, None]
    pa = g.pa[:, None, None]
    pp = g.pp[:, None, None]
    ax = (g.a - t_lat)[:, None, None]
    ant = y < yc
    by = np.where(ant, (g.b - t_ant)[:, None, None], (g.b - t_post)[:, None, None])
    p = np.where(ant, pa, pp)
    return (np.abs(x) / ax) ** p + (np.abs(y - yc) / by) ** p


def build_subject(P: SubjectParams):
    """Build one subject. Returns (labels, frame, oracle, stats)."""
    t0 = time.perf_counter()
    body = Body(P)
    sz = body.sz
    ws = P.width_scale
    s = SPACING_MM
    amax = float(body._a(np.linspace(body.z_bottom, body.z_top, 200)).max())
    dmax = float(body._d(np.linspace(body.z_bottom, body.z_top, 200)).max())
    nx = int(np.ceil((amax + 12) / s)) * 2 + 1
    ox = -(nx - 1) / 2 * s
    y_min = -(dmax + 14 + (60 if P.sex == "F" else 0))
    ny = int(np.ceil((6 - y_min) / s)) + 1
    oy = np.floor(y_min / s) * s
    nz = int(np.ceil((body.z_top - body.z_bottom) / s)) + 1
    oz = np.floor(body.z_bottom / s) * s
    cv = Canvas((ox, oy, oz), s, (nz, ny, nx))
    Z = cv.zs.astype(float)
    G = body.at(Z)
    rng = np.random.default_rng(P.bowel_seed)
    ORC: dict = {"landmarks": {}, "planes": {}, "vertebrae": {}, "kidneys": {}, "notes": {}}
    lm = ORC["landmarks"]

    # ------------------------------------------------------------------ body layers
    x3 = cv.xs[None, None, :].astype(np.float32)
    y3 = cv.ys[None, :, None].astype(np.float32)
    g32 = SimpleNamespace(**{k: np.asarray(v, np.float32) for k, v in vars(G).items()})
    lab = cv.labels
    zero = np.zeros_like(g32.a)
    v = _inset_value(x3, y3, g32, zero, zero, zero)
    lab[v <= 1] = L["skin"]
    v = _inset_value(x3, y3, g32, zero + 2, zero + 2, zero + 2)
    lab[v <= 1] = L["fat_subcutaneous"]
    v = _inset_value(x3, y3, g32, 2 + g32.fl, 2 + g32.fa, 2 + g32.fp)
    lab[v <= 1] = L["muscle"]
    v = _inset_value(x3, y3, g32, 2 + g32.fl + g32.ml, 2 + g32.fa + g32.ma, 2 + g32.fp + g32.mp)
    lab[v <= 1] = L["fat_visceral"]
    del v
    if P.sex == "F":
        zb = -125 * sz
        gb = body.at(zb)
        for sg in (-1, 1):
            c = np.array([sg * 0.42 * float(gb.a), float(gb.front) + 8, zb])
            ax = np.array([60, 42, 58]) * (0.9 + 0.25 * (P.fat_mm / 25))
            cv.ellipsoid(L["fat_subcutaneous"], c, ax, over=[L["air"], L["skin"]], track=False)
            cv.ellipsoid(L["breast"], c + [0, 6, 0], ax * 0.55, over=[L["fat_subcutaneous"]], track=False)
            cv.paint(L["skin"], c - ax - 4, c + ax + 4, lambda x, y, z, c=c, ax=ax: (
                (ellipsoid_k(x, y, z, c, ax, np.eye(3)) <= 1) & (ellipsoid_k(x, y, z, c, ax - 2.2, np.eye(3)) > 1)),
                over=[L["fat_subcutaneous"]], track=False)

    # ------------------------------------------------------------------ vertebral levels
    vt = {}
    ztop = _T1_TOP_REF * sz
    levels_c = ["C7", "C6", "C5"]
    z = ztop
    for name in levels_c:
        vt[name] = [z + _VH[name] * sz, z]
        z += _VH[name] * sz
    z = ztop
    for name in VERTEBRAE[3:]:
        h = _VH[name] * sz
        vt[name] = [z, z - h]
        z -= h
    z_s1 = z                                 # top of the sacrum (S1 upper endplate)
    z_sym = z_s1 - 108 * sz                  # pubic symphysis (upper border)
    zmid = {k: (a + b) / 2 for k, (a, b) in vt.items()}

    def level_rad(name):
        i = VERTEBRAE.index(name)
        rx = float(np.interp(i, [0, 3, 10, 14, 19], [15, 16, 19, 22, 25]))
        ry = float(np.interp(i, [0, 3, 10, 14, 19], [9, 11, 14, 16, 17]))
        rc = float(np.interp(i, [0, 3, 14, 19], [8.5, 7.5, 8.5, 10.5]))
        return rx, ry, rc
    # spine centreline (vertebral body centre y) from the posterior wall and a lordosis/kyphosis profile
    zc_pts = np.array([z_s1 - 10] + [zmid[n] for n in VERTEBRAE][::-1])
    names_rev = VERTEBRAE[::-1]
    yb_pts = []
    for n in names_rev:
        g = body.at(zmid[n])
        rx, ry, rc = level_rad(n)
        i = VERTEBRAE.index(n)
        para = float(np.interp(i, [0, 3, 8, 12, 15, 19], [20, 21, 21, 25, 28, 28]))
        curve = float(np.interp(i, [0, 3, 8, 12, 15, 17, 19], [0, 0, 5, 0, -4, -7, -3]))
        yb_pts.append(float(g.back_in) - para - 2 * rc - 6 - ry + curve)
    yb_pts.insert(0, yb_pts[0] + 8)
    spine_y = PchipInterpolator(zc_pts, np.array(yb_pts))

    def y_b(zz):
        return float(spine_y(np.clip(zz, zc_pts[0], zc_pts[-1])))

    # paraspinal (erector spinae) muscles: elliptical sections between the laminae and the back wall
    zz_all = Z.astype(np.float32)
    ok = (zz_all <= zmid["C5"] + 10) & (zz_all >= z_s1 - 50 * sz)
    lvl_i = np.interp(zz_all, zc_pts, np.r_[19, np.arange(19, -1, -1)].astype(float))
    rc_z = np.interp(lvl_i, [0, 3, 14, 19], [8.5, 7.5, 8.5, 10.5])
    ry_z = np.interp(lvl_i, [0, 3, 10, 14, 19], [9, 11, 14, 16, 17])
    yb_z = spine_y(np.clip(zz_all, zc_pts[0], zc_pts[-1]))
    y_lam = yb_z + ry_z + 2 * rc_z + 4
    y_back = G.back_in
    ax_z = np.interp(lvl_i, [0, 3, 10, 15, 19], [18, 20, 22, 28, 30]) * ws
    ay_z = np.maximum(8.0, (y_back - y_lam) / 2 + 3)
    cy_z = (y_lam + y_back) / 2 + 2
    cx_z = rc_z + 4 + ax_z * 0.85
    for sg in (-1, 1):
        m = ((((x3 - sg * cx_z[:, None, None]) / ax_z[:, None, None]) ** 2
              + ((y3 - cy_z[:, None, None]) / ay_z[:, None, None]) ** 2) <= 1) & ok[:, None, None]
        m &= lab == L["fat_visceral"]
        lab[m] = L["muscle"]

    # vertebrae, discs, cord (generator 1.6.0, issue 33: a body with a rounded, kidney-shaped axial section and
    # waisted sides, pedicles, laminae, articular pillars, transverse and spinous processes; stacked squares with a
    # ring before). One label per vertebra (its level), one bone HU: the label set has no cortical/cancellous split.
    # Body width (2 rx) and depth (2 ry) by level are level_rad's, within the published morphometry: thoracic
    # upper endplate width ~25 mm (T1) to ~40 mm (T12), depth ~16 to ~30 mm (Panjabi et al., Spine 1991;16:888-901);
    # lumbar width ~40 (L1) to ~50 mm (L5), depth ~33-36 mm (Panjabi et al., Spine 1992;17:299-306). Pedicle
    # width (transverse, outer) from the same papers: ~8 mm at T1, 4.5-5 mm at T4-T6 (the narrowest), ~8 mm at
    # T12, lumbar 8.7 / 8.9 / 10.3 / 12.9 / 18.0 mm (L1-L5); pedicle height ~10 mm (T1) to ~15-16 mm (T12-L5).
    # Cervical pedicles 5.5-6.5 mm (Panjabi et al., Spine 1991;16:861-9).
    ped_w = dict(zip(VERTEBRAE, [5.5, 5.7, 6.5, 8.0, 7.0, 5.6, 4.7, 4.5, 4.6, 4.8, 5.3, 5.7, 6.4, 7.6, 7.8,
                                 8.7, 8.9, 10.3, 12.9, 18.0]))
    ped_h = dict(zip(VERTEBRAE, [7.0, 7.0, 7.5, 9.6, 11.0, 11.5, 11.5, 11.5, 11.5, 11.7, 12.0, 12.5, 14.0, 15.5,
                                 16.0, 15.5, 15.0, 14.8, 14.5, 14.0]))

    def slab(ax, ay, bx, by, r, zlo, zhi):
        """Points within r of the axial segment (ax, ay)-(bx, by) (a plate standing between zlo and zhi)."""
        def f(x, y, z):
            vx, vy = bx - ax, by - ay
            t = np.clip(((x - ax) * vx + (y - ay) * vy) / (vx * vx + vy * vy + 1e-9), 0, 1)
            return (((x - ax - t * vx) ** 2 + (y - ay - t * vy) ** 2) <= r * r) & (z >= zlo) & (z <= zhi)
        lo = [min(ax, bx) - r, min(ay, by) - r, zlo]
        hi = [max(ax, bx) + r, max(ay, by) + r, zhi]
        return lo, hi, f

    for n in VERTEBRAE:
        zt, zb_ = vt[n]
        h = zt - zb_
        rx, ry, rc = level_rad(n)
        lumbar = n.startswith("L")
        cerv = n.startswith("C")
        disc = (0.24 if lumbar else 0.2) * h
        zm = (zt + zb_) / 2
        yb = y_b(zm)
        ycan = yb + ry + 1.5 + rc
        val = L[f"vertebra_{n}"]
        hb = h - disc   # the body between its endplates

        def kidney(x, y, rx_, ry_, yb):
            """Rounded axial section: an ellipse with the posterior wall drawn in at the midline (the
            vertebral body's kidney shape, the canal's anterior wall)."""
            e = (x / rx_) ** 2 + ((y - yb) / ry_) ** 2 <= 1
            notch = (x / (0.4 * rx_)) ** 2 + ((y - yb - 1.1 * ry_) / (0.25 * ry_)) ** 2 <= 1
            return e & ~notch

        def vbody(x, y, z, rx=rx, ry=ry, zm=zm, hb=hb, yb=yb):
            u = np.clip(2 * (z - zm) / hb, -1, 1)
            w = 1 - 0.1 * (1 - u * u)           # waisted sides: the mid-body ~10 % narrower than the endplates
            q = np.clip((np.abs(z - zm) - (hb / 2 - 3.0)) / 3.0, 0, 1)   # rounded endplate rims (3 mm)
            rim = 3.0 * (1 - np.sqrt(1 - q * q))
            return kidney(x, y, rx * w - rim, ry * (1 - 0.04 * (1 - u * u)) - rim, yb) & (np.abs(z - zm) <= hb / 2)
        cv.paint(val, [-rx, yb - ry, zb_], [rx, yb + ry, zt], vbody, track=False)
        cv.paint(L["intervertebral_disc"], [-rx, yb - ry, zb_ - disc], [rx, yb + ry, zb_ + disc],
                 lambda x, y, z, rx=rx, ry=ry, yb=yb, zb_=zb_, disc=disc: kidney(x, y, rx - 1, ry - 1, yb)
                 & (np.abs(z - zb_) <= disc / 2), notover=[L[f"vertebra_{m}"] for m in VERTEBRAE], track=False)
        # neural arch: pedicles (upper half of the body, seen end-on on an AP film), laminae, articular pillars
        pw, ph = ped_w[n], ped_h[n]
        xp = rc + pw / 2                      # pedicle centre: the canal's side wall
        pz = min(zm + 0.12 * h, zt - disc / 2 - ph / 2)
        y0p, y1p = yb + 0.7 * ry, ycan + 0.35 * rc
        for sg in (-1, 1):
            cv.paint(val, [sg * xp - pw, y0p, pz - ph], [sg * xp + pw, y1p, pz + ph],
                     lambda x, y, z, c=sg * xp, pw=pw, ph=ph, pz=pz, y0p=y0p, y1p=y1p: (
                         ((x - c) / (pw / 2)) ** 2 + ((z - pz) / (ph / 2)) ** 2 <= 1) & (y >= y0p) & (y <= y1p),
                     track=False)
            lz0, lz1 = zm - (0.42 if lumbar else 0.46) * h, zm + (0.3 if lumbar else 0.36) * h
            lo, hi, f = slab(sg * xp, y1p - 1, 0.0, ycan + rc + 3, 2.6 if lumbar else 2.4, lz0, lz1)
            cv.paint(val, lo, hi, f, track=False)
            lo, hi, f = slab(sg * (xp + 0.5), ycan + 0.2 * rc, sg * (xp + 0.5), ycan + 0.6 * rc,
                             4.5 if lumbar else 3.6, zb_ + 1, zt - 1)
            cv.paint(val, lo, hi, f, track=False)
        # spinous process: a tall flat plate in the lumbar spine, long, thin and sloping down in the thorax
        drop = (2 if lumbar else 12) * sz
        lsp = (30 if lumbar else 26) if not cerv else 18
        ry_sp = 0.27 * h if lumbar else 4.5
        hw = 3.6 if lumbar else 3.2

        def spinous(x, y, z, a=(ycan + rc + 2, zm - 1), b=(ycan + rc + lsp, zm - drop), r=ry_sp, hw=hw):
            vy, vz = b[0] - a[0], b[1] - a[1]
            t = np.clip(((y - a[0]) * vy + (z - a[1]) * vz) / (vy * vy + vz * vz), 0, 1)
            rr = r * (1 - 0.25 * t)
            d2 = ((y - a[0] - t * vy) ** 2 + (z - a[1] - t * vz) ** 2) / (rr * rr)
            return (d2 <= 1) & (x * x <= hw * hw * (1 - 0.7 * d2))   # a teardrop on the AP view
        cv.paint(val, [-hw, ycan + rc - ry_sp, zm - drop - ry_sp], [hw, ycan + rc + lsp + ry_sp, zm + ry_sp],
                 spinous, notover=[L["skin"], L["fat_subcutaneous"]], track=False)
        ltp = 34 if lumbar else (24 if n.startswith("T") else 18)
        for sg in (-1, 1):
            cv.tube(val, [[sg * (xp + 1), ycan - 2, zm], [sg * (rc + ltp), ycan + (-6 if lumbar else 4), zm + 1]],
                    [4.5, 4.0], smooth=False, track=False)
        cv.paint(L["spinal_cord"], [-rc, ycan - rc, zb_ - 1], [rc, ycan + rc, zt + 1],
                 lambda x, y, z, ycan=ycan, rc=rc: (x * x + (y - ycan) ** 2) <= (rc - 0.5) ** 2,
                 notover=[L["intervertebral_disc"]], track=False)
        ORC["vertebrae"][n] = {"z_top": zt, "z_bottom": zb_, "z_mid": zm, "body_centre": [0.0, yb, zm],
                               "upper_endplate_z": zt - disc / 2, "lower_endplate_z": zb_ + disc / 2}
    lm["spine_L5_S1"] = np.array([0.0, y_b(z_s1), z_s1])
    spine_labels = [L[f"vertebra_{m}"] for m in VERTEBRAE] + [L["intervertebral_disc"], L["spinal_cord"]]

    # ------------------------------------------------------------------ ribs, sternum, clavicles
    z_notch = 0.0
    z_xiph = -178 * sz
    st_att = [-8, -42, -68, -92, -116, -140, -160]

    def sternum_geom(zz):
        g = body.at(zz)
        w = float(np.interp(zz / sz, [-180, -165, -150, -55, -45, -5, 0], [7, 9, 15, 17, 20, 27, 24]))
        t = float(np.interp(zz / sz, [-180, -50, 0], [5, 6.5, 8]))
        yc_ = float(g.front) + 2 + float(g.fa) + t + 1
        return w, t, yc_
    ks = cv.box([-30, oy, z_xiph], [30, 0, z_notch])
    if ks is not None:
        for k in range(ks[0].start, ks[0].stop):
            zz = float(cv.zs[k])
            w, t, yc_ = sternum_geom(zz)
            x, y = cv.xs[None, :], cv.ys[:, None]
            m = (np.abs(x / w) ** 3 + np.abs((y - yc_) / t) ** 3) <= 1
            cv.paint_mask(L["sternum"], (slice(k, k + 1), slice(0, ny), slice(0, nx)), m[None], track=False)
    lm["sternal_notch"] = np.array([0.0, sternum_geom(-2)[2], 0.0])
    lm["xiphoid"] = np.array([0.0, sternum_geom(z_xiph + 4)[2], z_xiph + 4])

    theta_end = [150, 155, 160, 160, 160, 160, 156, 140, 128, 118, 96, 70]
    drops = [28, 48, 62, 74, 78, 80, 82, 84, 84, 80, 64, 44]
    for n in range(1, 13):
        vn = f"T{n}"
        zm = zmid[vn]
        rx, ry, rc = level_rad(vn)
        ycan = y_b(zm) + ry + 1.5 + rc
        for sg in (-1, 1):
            th0 = np.deg2rad(22)
            th1 = np.deg2rad(theta_end[n - 1])
            ths = np.linspace(th0, th1, 14)
            pts = [[sg * (rc + 22), ycan + 2, zm]]
            zz = zm
            for j, th in enumerate(ths):
                frac = (th - th0) / (th1 - th0)
                zz = zm - drops[n - 1] * sz * frac ** 1.1
                g = body.at(zz)
                ar = float(g.ai) + 2.5
                br = float(g.b_in) + 2.5
                pts.append([sg * ar * np.sin(th), float(g.yc_in) + br * np.cos(th), zz])
            P_ = cv.tube(L["rib"], pts, 4.5 if n > 2 else 5.0, step=3.0,
                         notover=spine_labels + [L["sternum"]], track=False)
            end = P_[-1]
            if n <= 7:
                zatt = st_att[n - 1] * sz
                w, t, yc_ = sternum_geom(zatt)
                cv.tube(L["costal_cartilage"], [end, [sg * (w + 4), yc_, zatt]], 4.5, smooth=False,
                        notover=[L["sternum"], L["rib"]], track=False)
            elif n <= 10:
                zatt = (st_att[6] - 14 - 8 * (n - 8)) * sz
                g = body.at(zatt)
                tgt = [sg * (24 + 16 * (n - 7)), float(g.front_in) + 4, zatt]
                cv.tube(L["costal_cartilage"], [end, tgt], 4.2, smooth=False, notover=[L["rib"]], track=False)
    for sg in (-1, 1):
        pts = []
        for zz, fx, dy in ((4, 0.1, 10), (10, 0.45, 12), (20, 0.8, 24)):
            zz *= sz
            g = body.at(zz)
            w, t, yc_ = sternum_geom(0)
            xx = sg * (w + 4) if fx == 0.1 else sg * fx * float(g.a)
            pts.append([xx, float(g.front) + 2 + float(g.fa) + dy, zz])
        cv.tube(L["clavicle"], pts, 6.0, notover=[L["sternum"]], track=False)

    # ------------------------------------------------------------------ heart frame (needed to place the diaphragm)
    hs = P.heart_scale
    az, el = np.deg2rad(P.heart_az_deg), np.deg2rad(P.heart_el_deg)
    d_ax = np.array([np.cos(el) * np.sin(az), -np.cos(el) * np.cos(az), -np.sin(el)])
    e_s = -np.cross([0, 0, 1.0], d_ax)
    e_s /= np.linalg.norm(e_s)
    rr = np.deg2rad(P.heart_roll_deg)
    e_n0 = np.cross(d_ax, e_s)
    e_s = np.cos(rr) * e_s + np.sin(rr) * e_n0
    e_n = np.cross(d_ax, e_s)
    if e_n[2] < 0:
        e_n = -e_n
    RH = np.stack([d_ax, e_s, e_n], axis=1)   # columns: long axis (base->apex), septal (to RV), 4ch normal
    uc, Lu, Rl, tw = 25 * hs, 50 * hs, 24 * hs, 10 * hs
    ch = {   # heart-frame centre, axes (along d, e_s, e_n)
        "lv_epi": ((uc, 0, 0), (Lu + 8 * hs, Rl + tw, Rl + tw)),
        "lv_endo": ((uc, 0, 0), (Lu, Rl, Rl)),
        "rv": ((30 * hs, 31 * hs, -3 * hs), (44 * hs, 21 * hs, 34 * hs)),
        "la": ((-26 * hs, -8 * hs, 2 * hs), (20 * hs, 29 * hs, 22 * hs)),
        "ra": ((-16 * hs, 45 * hs, -10 * hs), (22 * hs, 22 * hs, 27 * hs)),
    }

    def ext_along(cu, axes, e):
        """max of (p . e) over an ellipsoid given in the heart frame (relative to the MV centre)."""
        c = RH @ np.asarray(cu, float)
        q = RH.T @ e
        return float(c @ e + np.sqrt(np.sum((q * np.asarray(axes)) ** 2)))
    z_mv = vt["T7"][0] - 4 * sz + P.diaphragm_dz_mm * sz  # the heart rides on the diaphragm
    g = body.at(z_mv)
    ant = max(ext_along(*ch[k], np.array([0, -1.0, 0])) for k in ("lv_epi", "rv", "ra"))
    y_mv = float(g.front_in) + ant + 4
    x_mv = 10 * ws + P.heart_dx_mm
    low = max(ext_along(*ch[k], np.array([0, 0, -1.0])) for k in ("lv_epi", "rv"))
    mv = np.array([x_mv, y_mv, z_mv])
    z_heart_low = z_mv - low
    zdl = z_heart_low - 3
    zdr = zdl + P.diaphragm_right_above_left_mm

    def H(u, s_, n_):
        return mv + RH @ np.array([u, s_, n_], float)

    # ------------------------------------------------------------------ diaphragm surface
    gmid = body.at(zdr - 40)
    a_d = float(gmid.ai)
    b_d = float(gmid.b_in)
    y_dome = float(gmid.yc_in) - 0.1 * b_d

    # The posterior costophrenic recess (generator 1.5.0, issue 33): behind the domes the diaphragm's posterior
    # insertion (arcuate ligaments, 11th-12th ribs) runs about level from the spine to the lateral wall, so the
    # recess is a gutter along the back of each hemithorax, POSTERIOR_GUTTER_MM below its own dome (about where
    # the lungs' lowest point lay before, when two quadratic falls met in a posterolateral spike cut flat by the
    # paint box); that gutter is what a lateral radiograph shows as the posterior costophrenic angle. It acts
    # only in the posterior part (yr > 0.45); anteriorly and at the sides the domes keep their shape.
    gutter_r, gutter_l = zdr - POSTERIOR_GUTTER_MM, zdl - POSTERIOR_GUTTER_MM

    def zd(x, y):
        """Diaphragm (upper surface) height at (x, y)."""
        yr = (y - y_dome) / b_d
        fy = np.where(yr > 0, 105 * yr ** 2, 40 * yr ** 2)
        back = 400.0 * np.maximum(0.0, 0.45 - yr)  # the gutter's floor falls away in front of the posterior part
        zr_ = np.maximum(zdr - 75 * ((x + 0.33 * a_d) / (0.66 * a_d)) ** 2 - fy, gutter_r - back)
        zl_ = np.maximum(zdl - 75 * ((x - 0.33 * a_d) / (0.66 * a_d)) ** 2 - fy, gutter_l - back)
        return np.maximum(zr_, zl_)
    lm["diaphragm_dome_right"] = np.array([-0.33 * a_d, y_dome, zdr])
    lm["diaphragm_dome_left"] = np.array([0.33 * a_d, y_dome, zdl])

    # ------------------------------------------------------------------ lungs
    z_apex = zmid["T1"] + 6 * sz
    g_ap = body.at(z_apex)
    x_ap = 0.42 * float(g_ap.ai)
    y_ap = y_b(z_apex) - 18
    z_lung_low = min(zdr, zdl) - POSTERIOR_GUTTER_MM - 6

    def lungfn(side):
        def f(x, y, z):
            ybz = spine_y(np.clip(z, zc_pts[0], zc_pts[-1])).astype(np.float32)
            rx_sp = 28.0
            spine_ok = ((x / rx_sp) ** 2 + ((y - ybz) / 26.0) ** 2) > 1
            apex = z_apex - ((x - side * x_ap) ** 2 + ((y - y_ap) * 0.8) ** 2) / (2 * 34.0 * P.lung_scale)
            behind = (y > ybz + 12) & (np.abs(x) < 42)
            return (side * x > 9) & spine_ok & ~behind & (z <= apex) & (z >= zd(x, y) + 5)
        return f
    for side, name in ((1, "lung_left"), (-1, "lung_right")):
        lo = [0 if side > 0 else ox, oy, z_lung_low]
        hi = [-ox if side > 0 else 0, 0, z_apex + 2]
        cv.paint(L[name], lo, hi, lungfn(side), over=[L["fat_visceral"]])
    # diaphragm muscle sheet
    cv.paint(L["muscle"], [ox, oy, z_lung_low - 10], [-ox, 0, zdr + 8],
             lambda x, y, z: (z <= zd(x, y) + 5) & (z >= zd(x, y) - 1), over=[L["fat_visceral"]], track=False)
    # neck interior is muscle (strap, prevertebral, sternocleidomastoid)
    kneck = int(np.ceil((12 * sz - oz) / s))
    sub = lab[kneck:]
    sub[sub == L["fat_visceral"]] = L["muscle"]

    # ------------------------------------------------------------------ airways, oesophagus, posterior mediastinum
    z_car = zmid["T5"] - 2 * sz
    y_car = y_b(z_car) - level_rad("T5")[1] - 25
    carina = np.array([1.0, y_car, z_car])
    g_top = body.at(body.z_top - 4)
    tr_top = [0, float(g_top.front) + 26, body.z_top + 4]
    g0 = body.at(20 * sz)
    tr_pts = [tr_top, [0, float(g0.front) + 26, 20 * sz], [0.5, (float(g0.front) + 26 + y_car) / 2 - 4, (20 * sz + z_car) / 2],
              carina]
    fat_like = [L["fat_visceral"], L["muscle"], L["lung_left"], L["lung_right"]]
    cv.tube(L["fat_visceral"], tr_pts, 15, over=[L["lung_left"], L["lung_right"]], track=False)
    cv.tube(L["airway_wall"], tr_pts, 11.5, over=fat_like, track=False)
    cv.tube(L["trachea"], tr_pts, 9.0)
    lm["carina"] = carina + np.array([0, 0, 2.0])
    bro = {
        "right": [[carina, carina + [-17, 3, -14 * sz], carina + [-30, 8, -34 * sz], carina + [-42, 14, -58 * sz]],
                  [carina + [-17, 3, -14 * sz], carina + [-36, 2, -6 * sz], carina + [-50, 0, 6 * sz]]],
        "left": [[carina, carina + [22, 4, -18 * sz], carina + [38, 10, -38 * sz], carina + [52, 22, -62 * sz]],
                 [carina + [32, 7, -30 * sz], carina + [48, -6, -18 * sz], carina + [58, -12, -6 * sz]]],
    }
    for side, lst in bro.items():
        for k_, pts in enumerate(lst):
            r0 = (7.5 if side == "right" else 6.5) if k_ == 0 else 4.5
            cv.tube(L["airway_wall"], pts, [r0 + 2, r0 + 1.6, r0 + 1.2, r0 + 1][:len(pts)],
                    over=fat_like + [L["fat_visceral"]], track=False)
            cv.tube(L[f"bronchus_{side}"], pts, [r0, r0 - 0.4, r0 - 1, r0 - 1.5][:len(pts)],
                    over=[L["airway_wall"]])
    lm["bronchus_left_end"] = bro["left"][0][-1]
    lm["bronchus_right_end"] = bro["right"][0][-1]

    # oesophagus
    ry5 = level_rad("T5")[1]
    oe_pts = [[3, tr_top[1] + 16, body.z_top + 4], [3, float(g0.front) + 42, 20 * sz],
              [4, y_b(z_car) - ry5 - 9, z_car], [8, y_b(z_mv - 20) - level_rad("T8")[1] - 10, z_mv - 20],
              [16, y_b(zdl) - 22, zdl - 6], [30, y_b(zdl - 20) - 40, zdl - 20 * sz]]
    cv.tube(L["oesophagus"], oe_pts, 8.0, over=fat_like + [L["fat_visceral"]])

    # descending + abdominal aorta
    as_ = P.aorta_scale
    z_bif = zmid["L4"]
    z_arch_top = vt["T4"][0] + 4 * sz
    desc = []
    for zz, fx, dy in ((z_car - 8, 1.0, -2), (zmid["T7"], 0.95, -8), (zmid["T9"], 0.8, -16), (zmid["T11"], 0.55, -24),
                       (zmid["T12"], 0.35, -28)):
        rxz = level_rad("T8")[0]
        desc.append([fx * (rxz + 12), y_b(zz) + dy, zz])
    abd = [desc[-1]]
    for zz in (zmid["L1"], zmid["L2"], zmid["L3"], z_bif):
        n_ = "L2"
        abd.append([8.0, y_b(zz) - level_rad(n_)[1] - 12, zz])
    hiatus_z = zmid["T12"]
    g_arch = body.at(z_arch_top)
    asc_top = np.array([-24.0, float(g_arch.yc_in) - 8, z_car - 4])
    arch_mid = np.array([10.0, y_car - 22, z_arch_top - 12 * as_])
    arch_end = np.array([desc[0][0] + 2, y_b(z_car) - 22, z_car + 8])
    ORC["notes"]["aorta"] = "ascending: root to asc_top; arch: asc_top to desc start; descending to hiatus (mid T12)"

    # ------------------------------------------------------------------ heart
    av = H(-4 * hs, 14 * hs, 19 * hs)
    tv = H(-3 * hs, 40 * hs, -7 * hs)
    pv = av + np.array([16, -14, 16]) * hs
    a_dir = (asc_top - av) / np.linalg.norm(asc_top - av)
    aorta_all = [av - a_dir * 2, av + a_dir * 14 * hs, asc_top, arch_mid, arch_end] + desc + abd[1:]
    A_all, r_all = resample_curve(aorta_all, [15 * as_, 15.5 * as_, 14 * as_, 12.5 * as_, 12 * as_]
                                  + [11.5 * as_] * len(desc[:-1]) + [11 * as_] + [10 * as_, 9.5 * as_, 9 * as_, 8.5 * as_],
                                  step=3.0)
    cum = np.r_[0, np.cumsum(np.linalg.norm(np.diff(A_all, axis=0), axis=1))]

    def idx_near(p):
        return int(np.argmin(np.linalg.norm(A_all - p, axis=1)))
    i_asc, i_arch = idx_near(asc_top), idx_near(arch_end)
    i_hiat = int(np.argmin(np.abs(A_all[:, 2] - hiatus_z) + 1e3 * (np.arange(len(A_all)) < i_arch)))
    seg_aorta = {"aorta_ascending": (0, i_asc), "aorta_arch": (i_asc, i_arch),
                 "aorta_descending": (i_arch, i_hiat), "aorta_abdominal": (i_hiat, len(A_all) - 1)}
    # posterior aorta first (the atria are moulded around it)
    for name in ("aorta_descending", "aorta_abdominal"):
        a0, a1 = seg_aorta[name]
        cv.tube(L["fat_visceral"], A_all[a0:a1 + 1], r_all[a0:a1 + 1] + 3, smooth=False,
                over=[L["lung_left"], L["lung_right"]], track=False)
        cv.tube(L[name], A_all[a0:a1 + 1], r_all[a0:a1 + 1], smooth=False,
                notover=spine_labels + [L["oesophagus"], L["aorta_descending"]])

    hrt_over = [L["fat_visceral"], L["lung_left"], L["lung_right"], L["muscle"]]
    # epicardial fat shell then chambers
    for key in ("lv_epi", "rv", "ra", "la"):
        c, axs = ch[key]
        cv.ellipsoid(L["fat_visceral"], H(*c), np.asarray(axs) + 5, RH, over=[L["lung_left"], L["lung_right"]], track=False)
    wall = [L["heart_wall"]]
    chambers = [L[k] for k in ("lv_blood", "lv_myocardium", "rv_blood", "la_blood", "ra_blood")]
    for key, lname in (("ra", "ra_blood"), ("la", "la_blood")):
        c, axs = ch[key]
        cv.ellipsoid(L["heart_wall"], H(*c), np.asarray(axs) + 2.5, RH, over=hrt_over, track=False)
        cv.ellipsoid(L[lname], H(*c), axs, RH, over=hrt_over + wall)
    c_rv, a_rv = ch["rv"]
    c_lv, a_epi = ch["lv_epi"]
    a_endo = ch["lv_endo"][1]

    def rv_fn(extra):
        def f(x, y, z):
            u, s_, n_ = local(x, y, z, mv, RH)
            krv = ((u - c_rv[0]) / (a_rv[0] + extra)) ** 2 + ((s_ - c_rv[1]) / (a_rv[1] + extra)) ** 2 \
                + ((n_ - c_rv[2]) / (a_rv[2] + extra)) ** 2
            klv = ((u - uc) / a_epi[0]) ** 2 + (s_ / a_epi[1]) ** 2 + (n_ / a_epi[2]) ** 2
            return (krv <= 1) & (klv > 1) & (u >= -4 * hs - extra)
        return f
    bb = np.abs(RH) @ (np.asarray(a_rv) + 6) + 6
    crv_w = H(*c_rv)
    cv.paint(L["heart_wall"], crv_w - bb, crv_w + bb, rv_fn(3.5), over=hrt_over, track=False)
    cv.paint(L["rv_blood"], crv_w - bb, crv_w + bb, rv_fn(0.0), over=hrt_over + wall)

    def lv_fn(axes, ubase):
        def f(x, y, z):
            u, s_, n_ = local(x, y, z, mv, RH)
            k_ = ((u - uc) / axes[0]) ** 2 + (s_ / axes[1]) ** 2 + (n_ / axes[2]) ** 2
            return (k_ <= 1) & (u >= ubase)
        return f
    clv = H(*c_lv)
    bb = np.abs(RH) @ np.asarray(a_epi) + 6
    cv.paint(L["lv_myocardium"], clv - bb, clv + bb, lv_fn(a_epi, -5 * hs), over=hrt_over + wall + [L["rv_blood"], L["la_blood"], L["ra_blood"]])
    cv.paint(L["lv_blood"], clv - bb, clv + bb, lv_fn(a_endo, 0.0), over=[L["lv_myocardium"]])
    # valve orifices: mitral (LA|LV) and tricuspid (RA|RV) connect the chambers
    r_mv = 14 * hs

    def orifice(centre, radius, u0, u1):
        def f(x, y, z):
            u, s_, n_ = local(x, y, z, centre, RH)
            return (s_ * s_ + n_ * n_ <= radius * radius) & (u >= u0) & (u <= u1)
        return f
    ob = np.array([30, 30, 30.0])
    cv.paint(L["la_blood"], mv - ob, mv + ob, orifice(mv, r_mv, -12 * hs, 0.0), over=hrt_over + wall + chambers)
    cv.paint(L["lv_blood"], mv - ob, mv + ob, orifice(mv, r_mv, 0.0, 6 * hs), over=hrt_over + wall + chambers)
    cv.paint(L["ra_blood"], tv - ob, tv + ob, orifice(tv, 13 * hs, -12 * hs, 0.0), over=hrt_over + wall + [L["ra_blood"], L["rv_blood"], L["lv_myocardium"]])
    cv.paint(L["rv_blood"], tv - ob, tv + ob, orifice(tv, 13 * hs, 0.0, 8 * hs), over=hrt_over + wall + [L["ra_blood"], L["rv_blood"]])
    # LVOT to the aortic valve, RVOT to the pulmonary valve
    lvot_from = H(22 * hs, 6 * hs, 8 * hs)
    cv.tube(L["lv_blood"], [lvot_from, (lvot_from + av) / 2, av], 10 * hs, over=hrt_over + wall + [L["lv_myocardium"], L["la_blood"], L["lv_blood"]])
    rvot_from = H(14 * hs, 30 * hs, 16 * hs)
    cv.tube(L["heart_wall"], [rvot_from, pv], 14 * hs, over=hrt_over, track=False)
    cv.tube(L["rv_blood"], [rvot_from, pv], 11 * hs, over=hrt_over + wall + [L["rv_blood"]])
    _atrioventricular_junction(cv, mv, RH, r_mv, hs, av, over=hrt_over + wall + chambers + [L["oesophagus"]])

    apex_epi = H(uc + a_epi[0], 0, 0)
    apex_endo = H(uc + a_endo[0], 0, 0)
    lm.update({"mitral_valve_centre": mv, "aortic_valve_centre": av, "tricuspid_valve_centre": tv,
               "pulmonary_valve_centre": pv, "heart_apex": apex_epi - d_ax * 4, "lv_apex_endocardial": apex_endo,
               "lv_apex_epicardial": apex_epi, "lv_centre": H(uc, 0, 0)})

    # ascending aorta and arch (after the heart so the root abuts the LVOT)
    airways = [L["trachea"], L["airway_wall"], L["bronchus_left"], L["bronchus_right"]]
    no_heart = [L["lv_blood"], L["lv_myocardium"], L["rv_blood"], L["la_blood"], L["ra_blood"], L["mitral_valve"]]
    for name in ("aorta_ascending", "aorta_arch"):
        a0, a1 = seg_aorta[name]
        a0 = max(a0, 1) if name == "aorta_ascending" else a0
        cv.tube(L["fat_visceral"], A_all[a0:a1 + 1], r_all[a0:a1 + 1] + 3, smooth=False,
                over=[L["lung_left"], L["lung_right"]], track=False)
        cv.tube(L[name], A_all[a0:a1 + 1], r_all[a0:a1 + 1], smooth=False,
                notover=no_heart + spine_labels + airways + [L["oesophagus"], L["aorta_ascending"], L["aorta_descending"]])
    lm["aortic_arch_top"] = A_all[i_asc + int(np.argmax(A_all[i_asc:i_arch + 1, 2]))]
    lm["aortic_bifurcation"] = A_all[-1]
    lm["aorta_descending_mid"] = A_all[(seg_aorta["aorta_descending"][0] + seg_aorta["aorta_descending"][1]) // 2]
    arch_branch = {k: A_all[i_asc + int(f * (i_arch - i_asc))] for k, f in (("bct", 0.3), ("lcca", 0.5), ("lsca", 0.68))}

    # pulmonary trunk and branches
    pa_bif = np.array([6.0, (pv[1] + y_car) / 2 + 4, z_car - 12 * sz])
    pa_pts = [pv, pv + np.array([4, 8, 10]) * hs, pa_bif]
    vess_over = [L["fat_visceral"], L["lung_left"], L["lung_right"], L["muscle"], L["heart_wall"],
                 L["lung_vessels_left"], L["lung_vessels_right"]]
    cv.tube(L["fat_visceral"], pa_pts, 16 * hs, over=[L["lung_left"], L["lung_right"]], track=False)
    cv.tube(L["pulmonary_artery"], pa_pts, 13 * hs, over=vess_over)
    rpa = [pa_bif, pa_bif + [-30, 10, -2], lm["bronchus_right_end"] + [-4, -14, 18]]
    lpa = [pa_bif, pa_bif + [20, 12, 10], lm["bronchus_left_end"] + [4, -6, 24]]
    for pts in (rpa, lpa):
        cv.tube(L["pulmonary_artery"], pts, [10 * hs, 9 * hs, 7 * hs], over=vess_over)
    lm["pulmonary_bifurcation"] = pa_bif

    # vena cavae, arch branches, neck vessels
    ra_c = H(*ch["ra"][0])
    ra_top = ra_c + np.array([0, 0, ch["ra"][1][2] * 0.8])
    svc_top = np.array([-30.0 * ws, asc_top[1] + 6, 2 * sz])
    cv.tube(L["svc"], [svc_top, (svc_top + ra_top) / 2 + [-4, 0, 0], ra_top], 10.0, over=vess_over + [L["ra_blood"]])
    ztop_v = body.z_top + 4
    gn = body.at(ztop_v - 10)
    for sg in (-1, 1):
        jug = [[sg * 42 * ws, float(gn.yc) - 8, ztop_v], [sg * 40 * ws, float(g0.front) + 40, 20 * sz],
               [sg * 34 * ws, svc_top[1] - 4, 8 * sz]]
        if sg < 0:
            jug.append(svc_top)
        else:
            jug += [[10, svc_top[1] - 14, 4 * sz], svc_top]
        cv.tube(L["vein_other"], jug, [7, 7, 6.5] + [6.5] * (len(jug) - 3), over=vess_over)
    art_over = vess_over + [L["vein_other"]]
    bct_top = np.array([-20.0, arch_branch["bct"][1] - 8, 10 * sz])
    cv.tube(L["artery_other"], [arch_branch["bct"], bct_top], 6.5, over=art_over)
    for sg, start in ((-1, bct_top), (1, arch_branch["lcca"])):
        cv.tube(L["artery_other"], [start, [sg * 26 * ws, float(g0.front) + 42, 20 * sz],
                                    [sg * 28 * ws, float(gn.yc) - 2, ztop_v]], 4.5, over=art_over)
    for sg, start in ((-1, bct_top), (1, arch_branch["lsca"])):
        g20 = body.at(16 * sz)
        cv.tube(L["artery_other"], [start, [sg * 45 * ws, start[1] + 6, start[2] + 10 * sz],
                                    [sg * 0.8 * float(g20.a), float(g20.yc) - 4, 20 * sz]], 4.5, over=art_over)

    # ------------------------------------------------------------------ intrapulmonary vessel trees
    for side, lname, vname in ((1, "lung_left", "lung_vessels_left"), (-1, "lung_right", "lung_vessels_right")):
        hil = (lm["bronchus_left_end"] if side > 0 else lm["bronchus_right_end"]) + np.array([side * 4, -4, 6.0])
        seeds = [((side * 0.45, 0.0, 0.9), 34), ((side * 0.9, -0.35, 0.1), 36), ((side * 0.55, 0.5, -0.7), 40),
                 ((side * 0.6, -0.5, -0.6), 36), ((side * 0.8, 0.3, 0.45), 34)]
        stack = [(hil, np.array(dv, float) / np.linalg.norm(dv), ln, 4.6, 0) for dv, ln in seeds]
        while stack:
            p0, dv, ln, r, depth = stack.pop()
            p1 = p0 + dv * ln
            cv.tube(L[vname], [p0, p1], [r, r * 0.85], smooth=False, over=[L[lname]], track=False)
            if depth < 5 and r > 1.2:
                for sgn in (-1, 1):
                    perp = np.cross(dv, rng.normal(size=3))
                    perp /= np.linalg.norm(perp)
                    ang = np.deg2rad(rng.uniform(20, 38))
                    nd = np.cos(ang) * dv + np.sin(ang) * perp * sgn
                    stack.append((p1, nd / np.linalg.norm(nd), ln * rng.uniform(0.7, 0.85), r * 0.72, depth + 1))

    # ------------------------------------------------------------------ kidneys (retroperitoneal, before the liver)
    soft_over = [L["fat_visceral"], L["muscle"]]
    kid = {}
    # perirenal fat (generator 1.5.0, issue 33): the fat inside Gerota's fascia that outlines the kidney on a
    # radiograph; its thickness grows with body fat, from ~5 mm in the lean to ~20 mm in the obese [G: CT and
    # ultrasound perirenal fat thickness studies, posterior perirenal fat 0.5-3 cm rising with BMI and visceral
    # fat]; 8 mm for everyone before. Until the abdomen is finished the space is held by a placeholder label that
    # the liver, spleen and gut cannot take, so they never touch the capsule and the fat outlines the kidney on a
    # radiograph; then it becomes visceral fat.
    # Generator 1.6.0 (issue 33): the fat surrounds the whole kidney, a cap over each pole included (Gerota's fascia
    # closes above the kidney and the adrenal; below, its layers stay open round the ureter), and its thickness is
    # that of real perirenal fat by side: thickest posterolaterally and at the lower pole, thinnest at the hilum
    # (Meyers, Dynamic Radiology of the Abdomen, the perirenal space: its fat is most abundant posterolateral to the
    # kidney and about its lower pole; the posterior perirenal fat thickness of the Mayo adhesive probability score,
    # Davidiuk et al., Eur Urol 2014;66:1165-71, is measured behind the kidney): x1.0 posterolateral (the habitus thickness pr_fat
    # above), x1.4 over the lower pole, x1.0 over the upper pole, x0.6 (at least 4 mm) anteromedial at the hilum.
    pr_fat = float(np.clip(3.0 + 0.4 * P.fat_mm, 5.0, 20.0))
    # the kidney's shape (generator 1.6.0): a bean with broad, rounded poles (adult kidneys 10-13 cm long, 5-7.5 cm
    # wide, 3-4 cm thick: Gray's Anatomy 41st ed.; Emamian et al., AJR 1993;160:83-6, mean length L 11.2, R 10.9 cm,
    # volume L 146, R 134 ml), not an ellipsoid's pointed tips: along the long axis a superellipsoid
    # (|q0/a0|^KIDNEY_POLE_EXP), so a pole's last centimetres keep most of the kidney's section; its thickness 2 x 19.5
    # mm (x (L/112)^0.5) keeps the volume of the 1.5.0 ellipsoid (44 mm thick, 150 ml at 112 mm) and lies in the
    # published 3-4 cm; the hilar lip indents the medial border by up to 12 % of the width at mid-height (the bean)
    KIDNEY_POLE_EXP = 3.0

    def kidney_value(q0, q1, q2, a0, a1, a2, ex=(0.0, 0.0, 0.0, 0.0, 0.0, 0.0), notch=True):
        """<= 1 inside the kidney (ex = 0) or its fat envelope (ex: extra thickness on the +q0, -q0, +q1, -q1,
        +q2, -q2 sides); q1 > 0 is the hilum's side."""
        b0 = np.where(q0 >= 0, a0 + ex[0], a0 + ex[1])
        b1 = np.where(q1 >= 0, a1 + ex[2], a1 + ex[3])
        b2 = np.where(q2 >= 0, a2 + ex[4], a2 + ex[5])
        t0 = np.clip(np.abs(q0) / b0, 0, 1)
        q1e = q1
        if notch:   # the hilar lip: the medial border set back at mid-height, fading towards the poles
            q1e = q1 + np.where(q1 > 0, 0.12 * a1 * (1 - t0 ** 2) ** 2, 0.0)
        return np.abs(q0 / b0) ** KIDNEY_POLE_EXP + (q1e / b1) ** 2 + (q2 / b2) ** 2
    kidney_env = {}
    for side, nm in ((1, "left"), (-1, "right")):
        Lk = (P.kidney_len_left_mm if side > 0 else P.kidney_len_right_mm) * (0.92 + 0.08 * sz)
        # the kidneys follow the diaphragm by about half its excursion (respiratory renal motion)
        z_up = (zmid["T12"] + (P.kidney_left_dz_mm + 0.5 * P.diaphragm_dz_mm) * sz
                - (0 if side > 0 else P.kidney_right_drop_mm))
        tilt = np.deg2rad(P.kidney_tilt_deg)
        ax0 = np.array([-side * np.sin(tilt), np.sin(np.deg2rad(12)), np.cos(tilt)])
        ax0 /= np.linalg.norm(ax0)                 # lower -> upper pole (upper pole medial, posterior)
        hil0 = np.array([-side * np.cos(np.deg2rad(32)), -np.sin(np.deg2rad(32)), 0.0])
        Rk = rot_from_axes(ax0, hil0)              # columns: long axis, hilum direction, thickness
        a0, a1, a2 = Lk / 2, 29.0 * (Lk / 112) ** 0.5, 19.5 * (Lk / 112) ** 0.5
        zc_k = z_up - a0 * ax0[2]
        gk = body.at(zc_k)
        rxL = level_rad("L1")[0]
        ck = np.array([side * (rxL + 30 + a1 * 0.9) * (0.85 + 0.15 * ws), y_b(zc_k) + 10, zc_k])
        ck[1] = min(ck[1], float(gk.back_in) - a2 - 6)
        axes = np.array([a0, a1, a2])
        # the fat's thickness per side: posterolateral x1.0 and anteromedial x0.6 (from the direction's posterior
        # and lateral components), the lower pole x1.4, the upper pole x1.0
        def side_fat(d, side=side):
            pl = float(np.clip((d[1] + side * d[0]) / np.sqrt(2), -1, 1))   # +1 posterolateral, -1 anteromedial
            return max(4.0, pr_fat * (0.8 + 0.2 * pl))
        ex = (pr_fat, 1.4 * pr_fat, side_fat(Rk[:, 1]), side_fat(-Rk[:, 1]), side_fat(Rk[:, 2]), side_fat(-Rk[:, 2]))
        cname, mname, sname = f"kidney_{nm}_cortex", f"kidney_{nm}_medulla", f"kidney_{nm}_sinus"
        env_bb = np.abs(Rk) @ (axes + max(ex)) + 4

        def env_fn(x, y, z, ck=ck, Rk=Rk, axes=axes, ex=ex):
            q0, q1, q2 = local(x, y, z, ck, Rk)
            return kidney_value(q0, q1, q2, *axes, ex=ex, notch=False) <= 1

        def kid_fn(x, y, z, ck=ck, Rk=Rk, axes=axes):
            q0, q1, q2 = local(x, y, z, ck, Rk)
            return kidney_value(q0, q1, q2, *axes) <= 1
        cv.paint(PERIRENAL, ck - env_bb, ck + env_bb, env_fn, over=[L["muscle"], L["fat_visceral"]], track=False)
        kb = np.abs(Rk) @ axes + 4
        cv.paint(L[cname], ck - kb, ck + kb, kid_fn, over=soft_over + [PERIRENAL])
        kidney_env[nm] = (ck, Rk, axes, env_bb)
        sinus_c = ck + Rk @ np.array([0, 0.5 * a1, 0])
        sinus_ax = np.array([0.55 * a0, 0.55 * a1, 0.48 * a2])

        def med_fn(x, y, z, ck=ck, Rk=Rk, axes=axes, sinus_c=sinus_c, sinus_ax=sinus_ax):
            q0, q1, q2 = local(x, y, z, ck, Rk)
            inner = (q0 / (axes[0] - 7)) ** 2 + (q1 / (axes[1] - 7)) ** 2 + (q2 / (axes[2] - 6)) ** 2 <= 1
            ang = np.arctan2(q0 / axes[0], q2 / axes[2] + 1e-6 * 0)
            cols = np.abs(np.sin(4.0 * ang)) < 0.22
            return inner & ~cols
        bb = np.abs(Rk) @ axes + 4
        cv.paint(L[mname], ck - bb, ck + bb, med_fn, over=[L[cname]])
        cv.ellipsoid(L[sname], sinus_c, sinus_ax, Rk, over=[L[cname], L[mname]])
        hilum = ck + Rk @ np.array([0, a1 - 2, 0])
        kid[nm] = {"centre": ck, "axis": ax0, "R": Rk, "axes": axes, "hilum": hilum,
                   "upper_pole": ck + ax0 * (a0 - 3), "lower_pole": ck - ax0 * (a0 - 3)}
        ORC["kidneys"][nm] = {"centre": ck.tolist(), "long_axis": ax0.tolist(), "hilum_direction": Rk[:, 1].tolist(),
                              "length_mm": 2 * a0, "width_mm": 2 * a1, "thickness_mm": 2 * a2,
                              "hilum": hilum.tolist(), "upper_pole": kid[nm]["upper_pole"].tolist(),
                              "lower_pole": kid[nm]["lower_pole"].tolist()}
        lm[f"kidney_{nm}_upper_pole"] = kid[nm]["upper_pole"]
        lm[f"kidney_{nm}_lower_pole"] = kid[nm]["lower_pole"]
        lm[f"kidney_{nm}_hilum"] = hilum
        lm[f"kidney_{nm}_centre"] = ck
    kidney_labels = [L[f"kidney_{n}_{p}"] for n in ("left", "right") for p in ("cortex", "medulla", "sinus")]

    # psoas muscles
    for sg in (-1, 1):
        pts = [[sg * 22, y_b(zmid["T12"]) + 6, zmid["T12"]], [sg * 34, y_b(zmid["L2"]) + 4, zmid["L2"]],
               [sg * 44, y_b(zmid["L4"]) - 2, zmid["L4"]], [sg * 54, y_b(z_s1) - 18, z_s1 - 20 * sz],
               [sg * 70, y_b(z_s1) - 40, z_sym + 20 * sz]]
        cv.tube(L["muscle"], pts, [8, 15, 21, 22, 18], over=[L["fat_visceral"]], track=False)

    # IVC (through the liver later) and portal vein
    ra_bot = ra_c - np.array([0, 0, ch["ra"][1][2] * 0.7])
    ivc_pts = [ra_bot, [-22 * ws, y_b(zdr - 10) - 30, zdr - 15 * sz], [-24 * ws, y_b(zmid["T12"]) - 28, zmid["T12"]],
               [-22 * ws, y_b(zmid["L2"]) - level_rad("L2")[1] - 12, zmid["L2"]],
               [-18 * ws, y_b(z_bif) - level_rad("L4")[1] - 8, z_bif - 10 * sz]]
    iv_over = [L["fat_visceral"], L["muscle"], L["lung_left"], L["lung_right"], L["heart_wall"]]
    cv.tube(L["ivc"], ivc_pts, 11.0, over=iv_over + [L["ra_blood"]])
    # iliac vessels
    for sg in (-1, 1):
        art = [A_all[-1], [sg * 40, y_b(z_s1) - 34, z_s1 - 12 * sz], [sg * 68, y_b(z_s1) - 56, z_sym + 35 * sz],
               [sg * 80, y_b(z_s1) - 84, z_sym + 5 * sz]]
        cv.tube(L["artery_other"], art, [7.5, 6.5, 5.5, 5.0], over=[L["fat_visceral"], L["muscle"]])
        vn = [ivc_pts[-1], [sg * 38, y_b(z_s1) - 24, z_s1 - 18 * sz], [sg * 62, y_b(z_s1) - 44, z_sym + 35 * sz],
              [sg * 74, y_b(z_s1) - 72, z_sym + 5 * sz]]
        cv.tube(L["vein_other"], vn, [9, 8, 7, 6.5], over=[L["fat_visceral"], L["muscle"]])

    # ------------------------------------------------------------------ liver, gallbladder, spleen
    ls = P.liver_scale
    g_l = body.at(zdr - 60)
    ai_l, bin_l, ycin_l, fin_l = float(g_l.ai), float(g_l.b_in), float(g_l.yc_in), float(g_l.front_in)
    rl_c = np.array([-0.42 * ai_l, ycin_l + 0.02 * bin_l, zdr - 68 * ls * sz])
    rl_a = np.array([0.58 * ai_l, 0.87 * bin_l, 94 * ls * sz])
    ll_c = np.array([0.02 * ai_l, fin_l + 0.36 * bin_l, zdr - 40 * sz])
    ll_a = np.array([0.42 * ai_l, 0.36 * bin_l, 38 * ls * sz])
    R_ll = rot_zyx(np.deg2rad(-12), 0, 0)
    # the right lobe (generator 1.6.0, issue 33): its inferior border slopes up from the right flank to the left
    # (it follows the right costal margin: the liver's lowest point is the right lobe's inferolateral part, near the
    # 10th-11th ribs in the mid-axillary line; Gray's Anatomy 41st ed., liver surfaces and borders), so the lobe is
    # tilted with its lower end lateral (it was tilted medial before, which put the lowest point beside the spine);
    # and the posterior part of its inferior margin is thick and rounded, resting on the right kidney and the hepatic
    # flexure (the renal and colic impressions), where the anterior inferior border is a thin edge: below its
    # centre the lobe's section follows |q2|^n, n from 2 at the front to 3 at the back
    R_rl = rot_zyx(0, np.deg2rad(10), 0)
    abd_block = spine_labels + kidney_labels + [L["aorta_abdominal"], L["aorta_descending"], L["oesophagus"], L["ivc"]]

    def right_lobe_k(x, y, z):
        q0, q1, q2 = local(x, y, z, rl_c, R_rl)
        n = 2.0 + np.clip(0.5 + q1 / rl_a[1], 0.0, 1.0)      # 2 in the front third, 3 in the back third
        t2 = np.abs(q2 / rl_a[2])
        return (q0 / rl_a[0]) ** 2 + (q1 / rl_a[1]) ** 2 + np.where(q2 < 0, t2 ** n, t2 * t2)

    def liver_fn(x, y, z):
        k1 = np.sqrt(right_lobe_k(x, y, z))
        k2 = np.sqrt(ellipsoid_k(x, y, z, ll_c, ll_a, R_ll))
        d1 = (k1 - 1) * 60
        d2 = (k2 - 1) * 35
        h = np.clip(0.5 + 0.5 * (d2 - d1) / 18, 0, 1)
        dsm = d2 * (1 - h) + d1 * h - 18 * h * (1 - h)
        return (dsm <= 0) & (z <= zd(x, y) - 1)
    lo = np.minimum(rl_c - rl_a.max(), ll_c - ll_a.max())
    hi = np.maximum(rl_c + rl_a.max(), ll_c + ll_a.max())
    cv.paint(L["liver"], lo, hi, liver_fn, over=[L["fat_visceral"], L["muscle"]] , notover=abd_block)
    # the hepatic angle (generator 1.6.0, issue 33): on a plain abdominal radiograph the lower margin of the
    # posterior part of the liver is outlined by fat (Chen, Basic Radiology, McGraw-Hill, ch. 8: "the hepatic angle
    # delineates the lower margin of the posterior portion of the liver", a fat shadow; the shadow is the liver
    # against the extraperitoneal fat, Whalen et al., "The extraperitoneal perivisceral fat pad", Radiology), the
    # fat of the posterior hepatorenal and hepatocolic angle that the gut does not take. Held as a layer of the
    # habitus perirenal thickness (the same extraperitoneal fat) below and behind the right lobe's inferior margin
    # (its posterior, lateral quarter below the lobe's centre), so the hepatic flexure and small bowel stay off it
    ha_lo, ha_hi = rl_c - rl_a.max() - pr_fat - 4, rl_c + rl_a.max() + pr_fat + 4
    sl_ha = cv.box(ha_lo, [ha_hi[0], ha_hi[1], rl_c[2]])
    if sl_ha is not None:
        sub_ha = cv.labels[sl_ha]
        x_h, y_h, z_h = cv.coords(sl_ha)
        near_l = ndimage.distance_transform_edt(sub_ha != L["liver"]) * s <= pr_fat + s
        q_h = local(x_h, y_h, z_h, rl_c, R_rl)
        angle = near_l & (q_h[1] > 0) & (q_h[2] < 0) & (x_h < rl_c[0]) & (sub_ha == L["fat_visceral"])
        cv.paint_mask(PERIRENAL, sl_ha, angle, over=[L["fat_visceral"]], track=False)
    # carve: the diaphragm sheet stays (liver painted only over fat_visceral below the sheet)
    lab_l = cv.labels
    gb_c = np.array([-0.3 * ai_l, fin_l + 0.42 * bin_l, rl_c[2] - 0.55 * rl_a[2]])
    cv.ellipsoid(L["gallbladder"], gb_c, [15, 16, 36 * sz], rot_zyx(0, np.deg2rad(25), np.deg2rad(-30)),
                 over=[L["liver"], L["fat_visceral"]])
    # portal vein: confluence behind the pancreatic neck to the porta hepatis, with intrahepatic branches
    conf = np.array([-6.0, y_b(zmid["L1"]) - level_rad("L1")[1] - 30, zmid["L1"]])
    porta = np.array([-0.3 * ai_l, y_b(zmid["T12"]) - 48, zmid["T11"] - 6 * sz])
    pv_pts = [conf, (conf + porta) / 2 + [0, 0, 4], porta]
    cv.tube(L["portal_vein"], pv_pts, 7.5, over=[L["fat_visceral"], L["liver"], L["muscle"]])
    for tgt in ([-0.75 * ai_l, ycin_l, zmid["T10"]], [-0.02 * ai_l, fin_l + 0.35 * bin_l, zmid["T10"]],
                [-0.5 * ai_l, fin_l + 0.3 * bin_l, zmid["T12"]]):
        cv.tube(L["portal_vein"], [porta, (porta + np.asarray(tgt)) / 2 + [0, 0, 4], tgt], [6, 4.5, 3], over=[L["liver"]])
    for tgt in ([-0.6 * ai_l, ycin_l + 10, zdr - 10], [-0.1 * ai_l, fin_l + 0.3 * bin_l, zdr - 10],
                [-0.35 * ai_l, fin_l + 0.25 * bin_l, zdr - 14]):   # hepatic veins to the IVC
        iv_pt = np.array([-22 * ws, y_b(zdr - 10) - 30, zdr - 15 * sz])
        cv.tube(L["ivc"], [iv_pt, (iv_pt + np.asarray(tgt)) / 2, tgt], [5, 4, 3], over=[L["liver"]])
    lm["porta_hepatis"] = porta

    ss = P.spleen_scale
    g_s = body.at(zdl - 50)
    sp_c = np.array([0.7 * float(g_s.ai), float(g_s.yc_in) + 0.42 * float(g_s.b_in), zdl - 55 * sz * ss ** 0.33])
    sp_R = rot_from_axes([0.45, -0.89, 0.1], [0, 0, 1])
    sp_a = np.array([60, 56 * sz, 27]) * ss ** (1 / 3)
    sp_R = np.stack([sp_R[:, 0], sp_R[:, 1], sp_R[:, 2]], axis=1)
    # The spleen against the left kidney (generator 1.6.0, issue 33): on CT and MR a plane of perirenal fat, at least
    # the habitus thickness pr_fat, lies between the spleen's visceral (renal) surface and the kidney (Gerota's fascia
    # and the perirenal fat within it; the spleen took that fat before and touched the capsule on 34 MR episodes). The
    # fat takes its space from the spleen's medial surface; the spleen keeps the volume it had where the fat was its
    # own (1.5.0's rule) by growing about its centre (into the free space in front and below) until it is back
    # (normal adult splenic volume on CT 107-315 ml, mean 215 ml: Prassopoulos et al., Eur Radiol 1997;7:246-8;
    # 198 +- 88 ml: Caglar et al., Folia Morphol 2014;73:331-8).
    kl_labels = [L["kidney_left_cortex"], L["kidney_left_medulla"], L["kidney_left_sinus"]]
    sp_block = abd_block + [L["rib"]]
    plane_mm = pr_fat + s            # voxel centre to centre: a plane of pr_fat between the two surfaces

    def spleen_mask(c, a, over):
        bb_ = np.abs(sp_R) @ a + plane_mm + 6
        sl_ = cv.box(c - bb_, c + bb_)
        x_, y_, z_ = cv.coords(sl_)
        sub = cv.labels[sl_]
        m_ = (ellipsoid_k(x_, y_, z_, c, a, sp_R) <= 1) & (z_ <= zd(x_, y_) - 1)
        m_ &= np.isin(sub, over) & ~np.isin(sub, sp_block)
        kidney = np.isin(sub, kl_labels)
        near = np.zeros_like(m_)
        if kidney.any():
            near = ndimage.distance_transform_edt(~kidney) * s < plane_mm
        return sl_, m_, near
    _, m0, _ = spleen_mask(sp_c, sp_a, [L["fat_visceral"], L["muscle"], PERIRENAL])
    target = int(m0.sum())           # the 1.5.0 spleen's voxels (it could take the perirenal fat then)
    for it in range(6):
        sl_sp, m_sp, near = spleen_mask(sp_c, sp_a, [L["fat_visceral"], L["muscle"]])
        n_sp = int((m_sp & ~near).sum())
        if n_sp >= 0.98 * target or it == 5:
            break
        grow = min(1.25, (target / max(n_sp, 1)) ** (1 / 3))
        sp_a = sp_a * grow
    cv.paint_mask(PERIRENAL, sl_sp, m_sp & near, over=[L["fat_visceral"]], track=False)
    sp_cc, n_cc = ndimage.label(m_sp & ~near)
    if n_cc > 1:                     # one organ: slivers the grown ellipsoid finds between ribs stay fat
        sp_cc = sp_cc == 1 + int(np.argmax(np.bincount(sp_cc.ravel())[1:]))
    else:
        sp_cc = sp_cc > 0
    cv.paint_mask(L["spleen"], sl_sp, sp_cc, over=[L["fat_visceral"], L["muscle"]])
    # the landmark is the spleen voxel nearest the ellipsoid's centre (the fat plane may take the centre itself)
    ks_, js_, is_ = np.nonzero(cv.labels[sl_sp] == L["spleen"])
    psp = np.stack([cv.xs[sl_sp[2]][is_], cv.ys[sl_sp[1]][js_], cv.zs[sl_sp[0]][ks_]], axis=1).astype(float)
    lm["spleen_centre"] = psp[int(np.argmin(np.linalg.norm(psp - sp_c, axis=1)))] if len(psp) else sp_c

    # ------------------------------------------------------------------ stomach, pancreas
    g_st = body.at(zdl - 60)
    fin_s, ai_s = float(g_st.front_in), float(g_st.ai)
    st_pts = [oe_pts[-1], [0.42 * ai_s, y_b(zdl - 20) - 52, zdl - 24 * sz], [0.45 * ai_s, fin_s + 60, zdl - 62 * sz],
              [0.12 * ai_s, fin_s + 36, zdl - 104 * sz], [-0.2 * ai_s, fin_s + 46, zdl - 100 * sz]]
    st_r = [9, 30, 30, 21, 11]
    organ_block = abd_block + [L["liver"], L["spleen"], L["gallbladder"], L["portal_vein"], L["rib"], L["costal_cartilage"]]
    gut_over = [L["fat_visceral"]]
    _gut(cv, L["stomach"], st_pts, st_r, wall=4.0, content=L["stomach"], gas_frac=0.3, over=gut_over,
         clip=lambda x, y, z: z <= zd(x, y) - 2)
    lm["pylorus"] = np.array(st_pts[-1])
    pan_pts = [[-0.3 * ai_s, y_b(zmid["L2"]) - 42, zmid["L2"] - 4 * sz], [-0.05 * ai_s, conf[1] - 12, zmid["L1"]],
               [0.3 * ai_s, y_b(zmid["L1"]) - 44, zmid["L1"] + 6 * sz], sp_c + np.array([-14, -20, -22 * sz])]
    cv.tube(L["pancreas"], pan_pts, [15, 11, 11, 9], over=[L["fat_visceral"]])

    # ------------------------------------------------------------------ pelvis bones
    z_fh = z_sym + 14 * sz
    g_fh = body.at(z_fh)
    x_fh = 0.62 * float(g_fh.ai)
    y_fh = float(g_fh.yc_in) + 4
    z_crest = zmid["L4"] + 4 * sz
    g_cr = body.at(z_crest)
    # sacrum: a curved wedge (generator 1.6.0: curved sides and four pairs of anterior sacral foramina; straight
    # sides before). Base width (the alae) ~100-115 mm, S1-apex length ~100-110 mm, its anterior concavity (the
    # sacral curve) kept from 1.5.0 (the bladder is placed against it); Gray's Anatomy, 41st ed., ch. 43 (the
    # sacrum); the sides run nearly parallel over S1-S2 (the auricular surfaces) and converge to the apex below.
    z_cox = z_sym - 20 * sz
    y_sac_top = y_b(z_s1) + 16
    y_sac_bot = float(body.at(z_cox).back_in) - 14
    ks = cv.box([-60, oy, z_cox], [60, 0, z_s1])
    for k in range(ks[0].start, ks[0].stop):
        zz = float(cv.zs[k])
        f = (z_s1 - zz) / (z_s1 - z_cox)
        yc_s = y_sac_top + (y_sac_bot - y_sac_top) * f ** 0.8 - 14 * np.sin(np.pi * f)
        w = 12 + 42 * np.cos(0.5 * np.pi * min(max(f, 0.0), 1.0)) ** 1.3 * (1 - 0.06 * np.exp(-((f - 0.05) / 0.05) ** 2))
        w = min(w, 28 + 26 * np.sqrt(np.clip(f / 0.12, 0, 1)))   # the alae slope down from the promontory
        t = 20 - 11 * f
        xx, yy = cv.xs[None, :], cv.ys[:, None]
        m = (np.abs(xx / w) ** 2.2 + np.abs((yy - yc_s) / t) ** 2) <= 1
        for i_f in range(4):                 # anterior sacral foramina S1-S4, ~8 mm across, ~14-18 mm apart
            fz = z_s1 - (14 + 20 * i_f) * sz
            fx = 17 - 2.2 * i_f
            if abs(zz - fz) < 5:
                m &= ~(((np.abs(xx) - fx) ** 2 + (zz - fz) ** 2 * np.ones_like(yy)) <= 4.5 ** 2)
        cv.paint_mask(L["sacrum"], (slice(k, k + 1), slice(0, ny), slice(0, nx)), m[None],
                      notover=[L["artery_other"], L["vein_other"], L["skin"]], track=False)
    lm["sacral_promontory"] = np.array([0, y_sac_top - 18, z_s1])
    # bladder (before the hip bones, which then leave it alone)
    bs = P.bladder_scale ** (1 / 3)
    g_bl = body.at(z_sym + 30 * sz)
    bl_a = np.array([46, 36, 36]) * bs
    bl_z = z_sym + 6 * sz + bl_a[2] * 0.6
    f_s = np.clip((z_s1 - bl_z) / (z_s1 - z_cox), 0, 1)
    y_sac_front = y_sac_top + (y_sac_bot - y_sac_top) * f_s ** 0.8 - 14 * np.sin(np.pi * f_s) - (20 - 11 * f_s)
    room = (y_sac_front - 22) - (float(g_bl.front_in) + 10)     # AP space between the wall and the sacrum
    if 2 * bl_a[1] > room:                                      # flatter and wider, same volume
        ratio = max(room, 30.0) / (2 * bl_a[1])
        bl_a = bl_a * np.array([ratio ** -0.5, ratio, ratio ** -0.5])
    bl_y = float(g_bl.front_in) + 12 + bl_a[1]
    bl_c = np.array([0, bl_y, bl_z])
    # a filled bladder's base is flat (the trigone on the pelvic floor), its dome round (generator 1.5.0, issue 33;
    # an ellipsoid before): the lower half is a superellipsoid (|dz/az|^6), so the base meets the perivesical fat
    # over its width, as the bladder outline shows on a radiograph; its lowest point stays where it was
    def bladder_fn(x, y, z):
        dz = (z - bl_c[2]) / bl_a[2]
        return (((x - bl_c[0]) / bl_a[0]) ** 2 + ((y - bl_c[1]) / bl_a[1]) ** 2
                + np.where(dz < 0, np.abs(dz) ** 6, dz * dz)) <= 1
    cv.paint(L["bladder"], bl_c - bl_a - 2, bl_c + bl_a + 2, bladder_fn, over=[L["fat_visceral"], L["muscle"]])
    kb, jb, ib = np.nonzero(cv.labels == L["bladder"])
    pb = np.stack([cv.xs[ib], cv.ys[jb], cv.zs[kb]], axis=1).astype(float)
    lm["bladder_centre"] = pb[int(np.argmin(np.linalg.norm(pb - bl_c, axis=1)))]
    pel_over = [L["fat_visceral"], L["muscle"], L["fat_subcutaneous"]]
    # Hip bones and femurs (generator 1.6.0, issue 33; an ellipsoid shell cut by planes into a rectangular block
    # on the AP scout before). Published pelvimetry and femoral morphometry the shapes follow:
    # - iliac crest: its highest point at L4 (the intercristal, Tuffier's line: L4 body or L4-L5 in most adults),
    #   the crest an arch falling ~50 mm to the anterior superior iliac spine (ASIS, about S1) and to the
    #   posterior superior spine (about S2); bi-iliac (intercristal) breadth ~25-29 cm, the inter-ASIS distance
    #   ~0.85 of it (~22-25 cm; Bell, Pedersen & Brand, J Biomech 1990;23:617-21); here the crest's lateral point
    #   is the landmark iliac_crest_* (0.9 of the inner body half-width at the crest, as before);
    # - the wing a curved blade: in each axial section an elliptic arc from the sacroiliac joint round the
    #   iliac fossa (concave forward and inward) to the ASIS, 5-7 mm thick with a thicker crest rim, fanning out
    #   from the supra-acetabular body of the ilium to the crest; the greater sciatic notch below the SI joint;
    # - femoral head diameter ~49 mm in men, ~43 mm in women (CT/radiographic series, e.g. ~48-50 / 42-44 mm),
    #   neck-shaft angle ~125-130 deg, neck diameter ~0.6 of the head's (Gray's Anatomy, 41st ed., ch. 80);
    # - pubic symphysis: the symphyseal faces ~35 mm tall and ~12-15 mm deep, joint space 4-6 mm; intertuberous
    #   (ischial) diameter ~11-12 cm in women, ~8-10 cm in men (obstetric pelvimetry; Gray's Anatomy ch. 43).
    z_asis_drop = 50 * sz
    for sg in (-1, 1):
        fh = np.array([sg * x_fh, y_fh, z_fh])
        X_lat = 0.9 * float(g_cr.ai)
        y_c1 = float(g_cr.yc_in)
        Xc1, Rx1 = 52.0, X_lat - 52.0
        Ryp1 = float(np.clip(y_sac_top + 24 - y_c1, 25, 60))
        Rya1 = float(np.clip((y_c1 - (float(g_cr.front_in) + 22)) / 0.7, 40, 90))
        Xc0, Rx0, Ryp0, Rya0 = x_fh - 16, 22.0, 18.0, 20.0
        z_si_low = z_s1 - 60 * sz
        D_p = (z_crest - z_s1) + 20 * sz
        ph1, ph_top = np.deg2rad(-45.0), np.deg2rad(40.0)

        ks = cv.box([-200, oy, z_fh], [200, 0, z_crest])
        for k in range(ks[0].start, ks[0].stop):
            zz = float(cv.zs[k])
            u = float(np.clip((zz - z_fh) / (z_crest - z_fh), 0, 1))
            w = u ** 1.8                      # the wing flares out above the supra-acetabular body
            Xc, Rx = Xc0 + (Xc1 - Xc0) * w, Rx0 + (Rx1 - Rx0) * w
            Ryp, Rya = Ryp0 + (Ryp1 - Ryp0) * w, Rya0 + (Rya1 - Rya0) * w
            yc_ = y_fh + (y_c1 - y_fh) * u
            ph0 = np.deg2rad(20 + 80 * float(np.clip((zz - z_fh) / (z_si_low - z_fh), 0, 1)) ** 0.7)
            X = sg * cv.xs[None, :]
            Y = cv.ys[:, None] - yc_
            Ry = np.where(Y > 0, Ryp, Rya)
            ph = np.arctan2(Y / Ry, (X - Xc) / Rx)
            phc = np.clip(ph, ph1, ph0)
            Ryc = np.where(phc > 0, Ryp, Rya)
            d = np.hypot(X - Xc - Rx * np.cos(phc), Y - Ryc * np.sin(phc))
            # the crest: highest a little behind its lateral point, falling to the ASIS and to the PSIS
            s_ = np.where(phc < ph_top, (phc - ph_top) / (ph1 - ph_top), (phc - ph_top) / (ph0 - ph_top))
            crest = z_crest - np.where(phc < ph_top, z_asis_drop, D_p) * s_ * s_
            th = (6.0 + 7.0 * np.exp(-np.maximum(crest - zz, 0) / 6.0) + 22.0 * (1 - u) ** 3
                  + 10.0 * np.clip((np.rad2deg(phc) - 60) / 40, 0, 1))
            m = (d <= th / 2) & (zz <= crest - d * d / th)
            cv.paint_mask(L["pelvis"], (slice(k, k + 1), slice(0, ny), slice(0, nx)), m[None], over=pel_over,
                          track=False)
        # the arcuate line (pelvic brim): a ridge on the inner surface from the sacroiliac joint round to the
        # iliopubic eminence, the lateral arc of the pelvic inlet (transverse inlet diameter ~12-13 cm)
        cv.tube(L["pelvis"], [[sg * 48, y_sac_top - 12, z_s1 - 22 * sz], [sg * (x_fh - 8), y_fh - 2, z_fh + 40 * sz],
                              [sg * (x_fh - 16), y_fh - 16, z_fh + 14 * sz]], [6.0, 5.5, 6.5], over=pel_over,
                track=False)
        # acetabulum: a cup round the femoral head whose opening faces laterally, down (inclination ~45 deg)
        # and forward (anteversion ~20 deg), so its rim is oblique on both scouts
        rh = (24.5 if P.sex == "M" else 21.7) * sz ** 0.5
        n_ac = np.array([sg * 0.66, -0.26, -0.70])
        n_ac /= np.linalg.norm(n_ac)
        cv.paint(L["pelvis"], fh - 40, fh + 40, lambda x, y, z, fh=fh, rh=rh, n_ac=n_ac: (
            ((x - fh[0]) ** 2 + (y - fh[1]) ** 2 + (z - fh[2]) ** 2 <= (rh + 9) ** 2)
            & ((x - fh[0]) ** 2 + (y - fh[1]) ** 2 + (z - fh[2]) ** 2 > (rh + 1.5) ** 2)
            & ((x - fh[0]) * n_ac[0] + (y - fh[1]) * n_ac[1] + (z - fh[2]) * n_ac[2] <= 6.0)),
            over=pel_over, track=False)
        # pubis: superior ramus to the pubic body; the bodies meet at the symphysis (a 4 mm joint at x = 0)
        sym = np.array([sg * 7, float(body.at(z_sym).front_in) + 14, z_sym - 8 * sz])
        pub = np.array([sg * 10.5, float(body.at(z_sym).front_in) + 15, z_sym - 18 * sz])
        cv.tube(L["pelvis"], [fh + [-sg * 18, -16, 2], (fh + sym) / 2 + [0, -10, 4], sym], [10, 9, 9], over=pel_over,
                track=False)
        cv.paint(L["pelvis"], pub - [9, 9, 19 * sz], pub + [9, 9, 19 * sz], lambda x, y, z, pub=pub: (
            ((x - pub[0]) / 8.5) ** 2 + ((y - pub[1]) / 7.0) ** 2 + ((z - pub[2]) / (18 * sz)) ** 2 <= 1)
            & (np.abs(x) >= 2.0), over=pel_over, track=False)
        # inferior ramus and ischium round the obturator foramen, to the tuberosity and up to the acetabulum
        isch = np.array([sg * (x_fh - (34 if P.sex == "M" else 24)), y_fh + 26, z_fh - 52 * sz])
        cv.tube(L["pelvis"], [sym + [0, 6, -18 * sz], (sym + isch) / 2 + [sg * 6, 0, -8], isch, fh + [-sg * 6, 24, -12]],
                [8, 8, 12, 13], over=pel_over, track=False)
        cv.ellipsoid(L["pelvis"], isch + [sg * 2, 6, -4], [13, 15, 20 * sz], over=pel_over, track=False)
        # femur: a spherical head, the neck, greater and lesser trochanters, the shaft
        cv.ellipsoid(L["femur"], fh, [rh, rh, rh], over=pel_over + [L["pelvis"]], track=False)
        gt = fh + np.array([sg * 42, 6, -30 * sz])
        cv.tube(L["femur"], [fh, fh + 0.8 * (gt - fh)], [0.62 * rh, 0.7 * rh], smooth=False, over=pel_over,
                track=False)
        cv.ellipsoid(L["femur"], gt + [sg * 4, 4, 6 * sz], [13, 15, 22 * sz], over=pel_over, track=False)
        cv.ellipsoid(L["femur"], gt + [-sg * 20, 10, -30 * sz], [8, 8, 11 * sz], over=pel_over, track=False)
        cv.tube(L["femur"], [gt + [0, 0, 8], gt + [-sg * 4, -4, -40 * sz], [gt[0] - sg * 10, y_fh - 6, oz - 10]],
                [15, 13.5, 12.5], over=pel_over, track=False)
        lm[f"femoral_head_{'left' if sg > 0 else 'right'}"] = fh
    lm["pubic_symphysis"] = np.array([0, float(body.at(z_sym).front_in) + 14, z_sym])
    lm["iliac_crest_left"] = np.array([0.9 * float(g_cr.ai), float(g_cr.yc_in), z_crest])
    lm["iliac_crest_right"] = np.array([-0.9 * float(g_cr.ai), float(g_cr.yc_in), z_crest])
    # perivesical fat (generator 1.6.0, issue 33): the extraperitoneal bladder lies in the perivesical fat (inside
    # the umbilicovesical fascia, the prevesical space of Retzius in front), which outlines a distended bladder on a
    # radiograph ("a moderately distended urinary bladder may be outlined by pelvic fat": Chen, Basic Radiology,
    # ch. 8); held round the bladder, after the pelvic bones (which keep their place), so the rectum, sigmoid and
    # small bowel rest on it and not on the bladder wall. Its thickness is an assumption (no published thickness
    # found): half the habitus perirenal thickness, 3-10 mm.
    pv_fat = 0.5 * pr_fat
    sl_pv = cv.box(bl_c - bl_a - pv_fat - 4, bl_c + bl_a + pv_fat + 4)
    if sl_pv is not None:
        sub_pv = cv.labels[sl_pv]
        near_b = ndimage.distance_transform_edt(sub_pv != L["bladder"]) * s <= pv_fat + s
        cv.paint_mask(PERIRENAL, sl_pv, near_b, over=[L["fat_visceral"]], track=False)

    # ------------------------------------------------------------------ ureters, colon, small bowel
    bone_block = [L["pelvis"], L["sacrum"], L["femur"]]
    for sg, nm in ((1, "left"), (-1, "right")):
        kk = kid[nm]
        start = kk["hilum"] + kk["R"][:, 1] * 2 - kk["axis"] * 6
        pts = [start, [sg * 44, y_b(zmid["L3"]) - 8, zmid["L3"]], [sg * 42, y_b(zmid["L5"]) - 22, zmid["L5"]],
               [sg * 50, y_b(z_s1) - 38, z_s1 - 24 * sz], [sg * 52, bl_c[1] + 28, bl_c[2] + 6],
               [sg * 22, bl_c[1] + bl_a[1] - 6, bl_c[2] - 8]]
        cv.tube(L[f"ureter_{nm}"], pts, 3.0, step=2.0, over=[L["fat_visceral"], L["muscle"], L[f"kidney_{nm}_sinus"],
                                                              PERIRENAL])
        lm[f"ureter_{nm}_start"] = np.asarray(start)
    # colon frame
    g_c = body.at(zmid["L3"])
    ai_c, fin_c = float(g_c.ai), float(g_c.front_in)
    g_t = body.at(zmid["L2"])
    col_pts = [[-0.55 * ai_c, fin_c + 55, z_s1 - 6 * sz], [-0.72 * ai_c, y_b(zmid["L4"]) - 20, zmid["L4"]],
               [-0.72 * ai_c, y_b(zmid["L2"]) - 30, zmid["L2"]], [-0.62 * ai_c, float(g_t.front_in) + 48, zmid["L1"] - 4],
               [0.0, float(g_t.front_in) + 30, zmid["L2"] - 8 * sz], [0.62 * ai_c, y_b(zmid["L1"]) - 40, zmid["L1"] + 10 * sz],
               [0.76 * ai_c, y_b(zmid["L3"]) - 12, zmid["L3"]], [0.66 * ai_c, y_b(zmid["L5"]) - 30, zmid["L5"]],
               [0.3 * ai_c, fin_c + 70, z_s1 - 26 * sz], [0.0, y_b(z_s1) - 30, z_s1 - 50 * sz],
               [0.0, bl_c[1] + bl_a[1] + 24, z_sym + 20 * sz], [0, bl_c[1] + bl_a[1] + 20, z_sym - 20 * sz]]
    col_r = [24, 22, 21, 20, 19, 19, 18, 17, 16, 15, 17, 15]
    _gut(cv, L["colon"], col_pts, col_r, wall=3.0, content=L["bowel_content"], gas_frac=0.45, over=gut_over)
    lm["caecum"] = np.array(col_pts[0])
    # small bowel: a seeded serpentine filling the mid and lower abdomen
    zs_rows = np.linspace(zmid["L2"] - 6 * sz, z_s1 - 40 * sz, 8)
    sb = []
    for r_i, zz in enumerate(zs_rows):
        g_r = body.at(zz)
        ai_r, fin_r = float(g_r.ai), float(g_r.front_in)
        for layer in (0, 1, 2):
            yy = fin_r + 20 + 28 * layer + rng.uniform(-4, 4)
            xs_ = np.linspace(-0.5 * ai_r, 0.5 * ai_r, 6)
            if (3 * r_i + layer) % 2:
                xs_ = xs_[::-1]
            for xx in xs_:
                sb.append([xx + rng.uniform(-6, 6), yy + rng.uniform(-5, 5), zz + layer * 8 + rng.uniform(-5, 5)])
    sb.append(col_pts[0])
    _gut(cv, L["small_bowel"], sb, 12.5, wall=2.5, content=L["small_bowel"], gas_frac=0.15, over=gut_over, step=4.0)

    # the perirenal space held by its placeholder so far (see the kidneys) becomes fat
    cv.labels[cv.labels == PERIRENAL] = L["fat_visceral"]

    # ------------------------------------------------------------------ frame, oracle geometry
    apex_pt = lm["heart_apex"]
    lv_axis = (mv.copy(), apex_epi.copy())
    ORC["lv_long_axis"] = [mv.tolist(), apex_epi.tolist()]
    d = d_ax
    centre = (mv + apex_epi) / 2
    n4 = e_n
    n3 = np.cross(d, av - mv)
    n3 /= np.linalg.norm(n3)
    ORC["planes"] = {
        "4ch": {"centre": centre, "normal": n4, "row": d},
        "2ch": {"centre": centre, "normal": e_s, "row": d},
        "3ch": {"centre": centre, "normal": n3, "row": d},
        "sax": {"centre": centre, "normal": d, "row": e_s},
    }
    ORC["heart_frame"] = {"long_axis": d.tolist(), "septal": e_s.tolist(), "four_chamber_normal": e_n.tolist(),
                          "mv_radius_mm": r_mv, "lv_endo_axes": list(map(float, a_endo)),
                          "lv_epi_axes": list(map(float, a_epi)), "lv_centre_offset_mm": uc,
                          "sax_base_offset_mm": 6.0 * hs, "sax_apex_offset_mm": float(uc + a_epi[0])}
    ORC["levels"] = {"z_notch": 0.0, "z_s1_top": z_s1, "z_symphysis": z_sym, "z_carina": z_car,
                     "z_diaphragm_right": zdr, "z_diaphragm_left": zdl, "z_mitral": z_mv, "z_aortic_bifurcation": z_bif}
    frame = {"origin_mm": [float(ox), float(oy), float(oz)], "spacing_mm": [s, s, s], "shape": [nz, ny, nx],
             "axes": "LPS: +x patient left, +y posterior, +z superior (head)",
             "x0": "body left-right midline", "y0": "table top (supine: back on y = 0, body at y < 0)",
             "z0": "jugular (sternal) notch"}
    organ_ret = {}
    for organ in RETENTION_ORGANS:
        r_ = cv.retention([L[n] for n in ORGANS[organ]])
        if r_ is not None:
            organ_ret[organ] = r_
    stats = {"build_s": time.perf_counter() - t0, "primitive_count": {int(k): v for k, v in cv.primitive_count.items()},
             "organ_retention": organ_ret}
    return cv.labels, frame, ORC, stats


# The atrioventricular junction (generator 1.6.0, issue 33): before it the LV blood ran into the LA blood through
# the mitral orifice with nothing across it, so the mitral valve plane had no edge on any image. Real values:
MV_ANNULUS_MM = 3.0      # the fibrous mitral annulus, ~3 mm thick; its ring ~30 mm across (the orifice r_mv = 14 mm
#                          x heart scale, + half the ring: Ormiston JA et al., Circulation 1981;64:113-120, systolic
#                          annulus diameter ~2.9 cm)
MV_LEAFLET_MM = 2.0      # the leaflets: 1-1.5 mm at autopsy (Sahasakul Y et al., Am J Cardiol 1988;62:424-430),
#                          drawn one voxel of the 2 mm grid thick (thinner would leave holes in an oblique sheet)
MV_TENT_MM = 5.0         # closed (the images are single-phase): the leaflets meet on the LV side of the annulus
#                          plane, systolic tenting height of normal valves ~4-6 mm (Yiu SF et al., Circulation
#                          2000;102:1400-1406, controls)
AV_GROOVE_FAT_MM = 10.0  # the left AV groove's fat pad outside the annulus (radially), carrying the circumflex
LCX_RADIUS_MM = 1.75     # proximal circumflex lumen ~3.5 mm (Dodge JT et al., Circulation 1992;86:232-246)
CS_RADIUS_MM = 4.0       # coronary sinus ~8 mm across in the posterior AV groove (its ostium ~10-15 mm)


def _atrioventricular_junction(cv: Canvas, mv, RH, r_mv: float, hs: float, av, over) -> None:
    """The mitral annulus (a fibrous ring about the orifice in the valve plane u = 0; towards the aortic valve
    it runs on as the aortic-mitral curtain up to the aortic valve's level, between the LV outflow and the LA),
    the closed leaflets
    (a shallow cone from the annulus to their coaptation MV_TENT_MM on the LV side), the orifice's blood on
    either side of them, and the left atrioventricular groove (fat outside the annulus on its atrial side, from
    the aortic-mitral continuity round the lateral wall to the crux) with the circumflex artery and the
    coronary sinus in it. The leaflets, the annulus and the blood next to them are painted over the chambers
    and over the oesophagus (which runs through the valve of a few subjects whose heart lies far back, s01,
    s02, s04, s22: a placement conflict left as it is, moving the heart would move the answers); landmarks (mitral valve centre, apex, long
    axis) are unchanged: they come from the construction."""
    r_ann = r_mv + MV_ANNULUS_MM / 2  # the ring's centre line
    half_t = MV_LEAFLET_MM / 2
    reach = r_ann + AV_GROOVE_FAT_MM + 25
    box = np.array([reach, reach, reach])
    lo, hi = mv - box, mv + box
    q = RH.T @ (np.asarray(av, float) - mv)
    th_av = np.arctan2(q[2], q[1])  # the aortic valve's direction about the axis (angle 0: the septum, e_s)

    def frame(x, y, z):
        u, s_, n_ = local(x, y, z, mv, RH)
        return u, np.sqrt(s_ * s_ + n_ * n_), np.arctan2(n_, s_)

    def leaflet_u(rho):
        return MV_TENT_MM * np.clip(1.0 - rho / r_mv, 0.0, 1.0)

    def groove(th):  # the left AV groove: not the aortic-mitral continuity, not the septum
        d_av = np.abs(np.angle(np.exp(1j * (th - th_av))))
        return (d_av >= np.deg2rad(60)) & (np.abs(th) >= np.deg2rad(30))

    def f_la(x, y, z):
        u, rho, _ = frame(x, y, z)
        return (rho <= r_mv) & (u >= -12 * hs) & (u < leaflet_u(rho) - half_t)

    def f_la_near(x, y, z):  # the atrial blood next to the leaflets, where the oesophagus of a far-back heart ran
        u, rho, _ = frame(x, y, z)
        return (rho <= r_mv) & (u >= -MV_TENT_MM) & (u < leaflet_u(rho) - half_t)

    def f_fibrosa(x, y, z):  # the aortic-mitral curtain: fibrous continuity from the annulus to the aortic valve
        u, rho, th = frame(x, y, z)
        d_av = np.abs(np.angle(np.exp(1j * (th - th_av))))
        return ((np.abs(rho - r_ann) <= MV_ANNULUS_MM / 2) & (u <= MV_ANNULUS_MM / 2) & (u >= q[0] - 6.0)
                & (d_av < np.deg2rad(60)))

    def f_lv(x, y, z):
        u, rho, _ = frame(x, y, z)
        return (rho <= r_mv) & (u > leaflet_u(rho) + half_t) & (u <= 6 * hs + MV_TENT_MM)

    def f_leaflets(x, y, z):
        u, rho, _ = frame(x, y, z)
        return (rho <= r_mv) & (np.abs(u - leaflet_u(rho)) <= half_t)

    def f_annulus(x, y, z):
        u, rho, _ = frame(x, y, z)
        return (np.abs(rho - r_ann) <= MV_ANNULUS_MM / 2) & (np.abs(u) <= MV_ANNULUS_MM / 2)

    def f_atrial_side(x, y, z):  # the LV's basal myocardium on the atrial side of the annulus plane
        u, rho, _ = frame(x, y, z)
        return (rho > r_mv) & (u < -MV_ANNULUS_MM / 2)

    def f_groove_fat(x, y, z):
        u, rho, th = frame(x, y, z)
        return ((rho > r_ann + MV_ANNULUS_MM / 2) & (rho <= r_ann + MV_ANNULUS_MM / 2 + AV_GROOVE_FAT_MM)
                & (u >= -8.0 * hs) & (u <= -3.0) & groove(th))

    la, lv, valve, fat, wall = L["la_blood"], L["lv_blood"], L["mitral_valve"], L["fat_visceral"], L["heart_wall"]
    no_oe = [v for v in over if v != L["oesophagus"]]
    cv.paint(la, lo, hi, f_la, over=no_oe, track=False)
    cv.paint(la, lo, hi, f_la_near, over=over, track=False)
    cv.paint(lv, lo, hi, f_lv, over=over, track=False)
    cv.paint(valve, lo, hi, f_leaflets, over=over)
    cv.paint(valve, lo, hi, f_fibrosa, over=no_oe)
    # the atrial wall, not the LV, inserts into the annulus from above: the LV ends at the valve plane
    cv.paint(wall, lo, hi, f_atrial_side, over=[L["lv_myocardium"]], track=False)
    cv.paint(valve, lo, hi, f_annulus, over=over + [fat])
    # the groove's fat outside the annulus on its atrial side, 3 mm of wall between it and the LV's blood
    cv.paint(fat, lo, hi, f_groove_fat, over=[L["lv_myocardium"], wall], track=False)
    # the circumflex artery round the groove and the coronary sinus in its posterior part (towards the crux)
    for label, radius, rho_c, u_c, span in (
            (L["artery_other"], LCX_RADIUS_MM, r_ann + 5.0, -5.0 * hs, (60, 330)),
            (L["vein_other"], CS_RADIUS_MM, r_ann + 6.5, -7.0 * hs, (200, 330))):
        ths = np.deg2rad(np.arange(span[0], span[1] + 1, 10.0)) + (th_av if span[0] == 60 else 0.0)
        ths = ths[groove(np.angle(np.exp(1j * ths)))]
        if ths.size < 2:
            continue
        pts = [mv + RH @ np.array([u_c, rho_c * np.cos(t), rho_c * np.sin(t)]) for t in ths]
        cv.tube(label, pts, radius, over=[fat], track=False)


def _gut(cv: Canvas, wall_label: int, pts, radii, wall: float, content: int, gas_frac: float, over, step: float = 3.0,
         clip=None):
    """A hollow viscus along a centreline: wall, fluid content, and gas in the non-dependent (anterior) part.

    Supine patient: gravity is +y, so gas collects where (y - centreline y) < -h*r."""
    P, r = resample_curve(pts, radii, step)
    sl_all = cv.box(P.min(0) - r.max() - 4, P.max(0) + r.max() + 4)
    if sl_all is None:
        return
    shp = tuple(s_.stop - s_.start for s_ in sl_all)
    best = np.full(shp, np.inf, np.float32)
    gas = np.zeros(shp, bool)
    off = [sl_all[0].start, sl_all[1].start, sl_all[2].start]
    h = 1 - 2 * gas_frac
    for a, b, ra, rb in zip(P[:-1], P[1:], r[:-1], r[1:]):
        sl = cv.box(np.minimum(a, b) - max(ra, rb) - 2, np.maximum(a, b) + max(ra, rb) + 2)
        if sl is None:
            continue
        x, y, z = cv.coords(sl)
        v = b - a
        L2 = float(v @ v) or 1e-9
        px, py, pz = x - a[0], y - a[1], z - a[2]
        t = np.clip((px * v[0] + py * v[1] + pz * v[2]) / L2, 0, 1)
        qy = py - t * v[1]
        rr = ra + t * (rb - ra)
        dd = np.sqrt((px - t * v[0]) ** 2 + qy ** 2 + (pz - t * v[2]) ** 2) - rr
        loc = tuple(slice(sl[i].start - off[i], sl[i].stop - off[i]) for i in range(3))
        cur = best[loc]
        better = dd < cur
        cur[better] = dd[better]
        g = gas[loc]
        g[better] = (qy < -h * (rr - wall))[better]
    inside = best <= 0
    if clip is not None:
        inside &= clip(*cv.coords(sl_all))
    cv.paint_mask(wall_label, sl_all, inside, over=over)
    lumen = (best <= -wall) & inside
    if content != wall_label:
        cv.paint_mask(content, sl_all, lumen & ~gas, over=[wall_label], track=False)
    cv.paint_mask(L["bowel_gas"], sl_all, lumen & gas, over=[wall_label, content], track=False)
