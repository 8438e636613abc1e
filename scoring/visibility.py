"""Visibility, the third validity figure (issue 33): does every anatomical boundary that defines an answer show
on the images the agent plans on?

CT: for every L2+ CT card and episode, the two scouts are formed exactly as the console forms them
(consoles.ct.model.CTModel: the card's protocol, the episode's positioning and breath-hold, the scout's photon
noise; driven by runner.visibility) and windowed as the console shows them (rendering.ct_physics.
scout_display_grey). For each boundary
(an organ's top or bottom end along the table, the answer axis) the organ mask, which comes from the subject
oracle (this module is scoring's: the console never reads it), is projected along the beam onto the scout's
pixel grid; in every column whose edge lies within CAP_MM of the organ's extreme (the cap that sets the end),
the mean grey BAND_MM inside the edge minus the mean grey BAND_MM outside it, averaged over those columns, is
the boundary's contrast; divided by the displayed image's pixel-noise SD in the same pixels (the noisy
display minus the noise-free one; never below the 8-bit display's quantisation SD, 1/sqrt(12) grey) it is
the boundary's CNR. Bound: CNR >= CNR_BOUND (the low end of the Rose criterion) on at least one scout.

MR (the renal cards): every kidney's poles (along z) and anterior / posterior borders (along y, the coronal
slab's axis) on the images the card plans on (localizer images, series acquired before the session), as the
viewport displays them. The kidney mask is cut by each image's slice as the image samples the volume
(section_mask); boundary_cnr measures the section's edge with the answer axis along rows; an image shows the
boundary only if its section ends at most SECTION_CAP_MM short of the kidney's true extreme (mr_measures).

MR cardiac planning and ultrasound (oblique_measures): boundaries at any angle on the image (the LV's apex and
mitral valve plane along its long axis, the heart's borders; a kidney's poles along its long axis and its
capsule across it on the live ultrasound image) are measured on the image resampled with the boundary's
direction up, with the same section rule; ultrasound's noise is its speckle (no noise-free image exists).

Pure numpy, no Qt or VTK.
"""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Sequence

import numpy as np

CNR_BOUND = 3.0
BAND_MM = 6.0  # "a few mm" inside and outside the edge, along z
CAP_MM = 10.0  # columns whose edge lies this close to the organ's extreme define the end
QUANT_SD_GREY = 1.0 / np.sqrt(12.0)  # an 8-bit display's rounding noise: the floor of the pixel-noise SD
VIEWS = ("ap", "lateral")
LANDMARK_HALF_WIDTH_MM = 4.0  # the carina: the crotch of the airways' inverted V, not the bronchi beside it


@dataclass(frozen=True)
class Boundary:
    """One answer-defining boundary: an organ's (scoring.subject_oracle organ name) top or bottom end."""

    structure: str  # what a radiographer calls it
    organ: str
    end: str  # "top" | "bottom"
    landmark: str | None = None  # only the columns within LANDMARK_HALF_WIDTH_MM of this oracle landmark


_LUNG = (Boundary("lung apex", "lungs", "top"), Boundary("lowest lung point", "lungs", "bottom"))
_KIDNEY_UPPER = (Boundary("left kidney upper pole", "kidney_left", "top"),
                 Boundary("right kidney upper pole", "kidney_right", "top"))
_KIDNEY_LOWER = (Boundary("left kidney lower pole", "kidney_left", "bottom"),
                 Boundary("right kidney lower pole", "kidney_right", "bottom"))
# The anatomy keys of scoring.registry.ct.ANATOMY -> the boundaries that set the answer's range ends. A KUB
# range runs from the higher upper pole to the bladder's bottom (the lower poles lie inside it); the CCTA range
# is set by the heart, and its goal names the carina (where the tracheal air column forks: the airways' lowest
# point on the columns through it) as the top landmark.
CT_BOUNDARIES: dict[str, tuple[Boundary, ...]] = {
    "lungs": _LUNG,
    "liver": (Boundary("liver dome", "liver", "top"), Boundary("liver tip", "liver", "bottom")),
    "kidneys": _KIDNEY_UPPER + _KIDNEY_LOWER,
    "heart": (Boundary("heart top", "heart", "top"), Boundary("heart bottom", "heart", "bottom"),
              Boundary("carina", "airways", "bottom", landmark="carina")),
    "kub": _KIDNEY_UPPER + (Boundary("bladder bottom", "bladder", "bottom"),),
}


@dataclass(frozen=True)
class Measure:
    """One boundary on one scout of one episode."""

    task: str
    subject: str
    seed: int
    structure: str
    view: str
    cnr: float
    contrast_grey: float  # mean inside - mean outside (display grey, 0-255)
    noise_sd_grey: float
    width_mm: float  # the boundary's width the means run over
    short_mm: float = 0.0  # MR: how far the organ's section on this image ends short of its true extreme
    section_cnr: float | None = None  # MR: the section edge's CNR however far short it ends (cnr is 0 then)


def section_measure(task: str, subject: str, seed: int, structure: str, view: str,
                    edge: tuple[float, float, float, float], short_mm: float) -> Measure:
    """A Measure for a boundary seen on a single slice: `edge` is boundary_cnr's (CNR, contrast, SD, width) of the
    organ's section on it; the CNR counts only when that section ends within SECTION_CAP_MM of the true extreme
    (its edge CNR is kept in section_cnr either way)."""
    cnr, con, sd, width = edge
    shows = short_mm <= SECTION_CAP_MM
    return Measure(task, subject, int(seed), structure, view, round(float(cnr), 2) if shows else 0.0,
                   round(float(con), 2), round(float(sd), 2), float(width),
                   round(short_mm, 1) if np.isfinite(short_mm) else 999.0, round(float(cnr), 2))


def boundary_cnr(grey: np.ndarray, grey_clean: np.ndarray | None, footprint: np.ndarray, end: str,
                 pixel_mm: float, valid: np.ndarray | None = None) -> tuple[float, float, float, float]:
    """(CNR, contrast, noise SD, width mm) of one organ end on one displayed scout.

    `grey` is the displayed image, `grey_clean` the same without noise, `footprint` the organ's projection on
    the same pixel grid (rows top = superior). Rows are the answer axis (z). Without a noise-free image
    (ultrasound: the speckle is the noise) the noise SD is the SD of the pixels about their band's mean in
    their own column (inside and outside bands pooled): the speckle, not the differences between columns
    (a rib shadow over some of them, the depth gain), which are image. `valid`: pixels that are image (a column whose bands
    touch any other pixel is not used: outside an ultrasound sector, beyond a resampled image's corners)."""
    rows_any = footprint.any(axis=0)
    cols = np.nonzero(rows_any)[0]
    if cols.size == 0:
        return 0.0, 0.0, 0.0, 0.0
    n_r = footprint.shape[0]
    if end == "top":
        edge = np.argmax(footprint[:, cols], axis=0)  # first organ row from the top
        extreme = edge.min()
        keep = edge <= extreme + CAP_MM / pixel_mm
    else:
        edge = n_r - 1 - np.argmax(footprint[::-1, cols], axis=0)  # last organ row
        extreme = edge.max()
        keep = edge >= extreme - CAP_MM / pixel_mm
    band = int(round(BAND_MM / pixel_mm))
    inside_rows, outside_rows, used = [], [], []
    for c, e in zip(cols[keep], edge[keep]):
        if end == "top":
            r_in, r_out = np.arange(e, e + band), np.arange(e - band, e)
        else:
            r_in, r_out = np.arange(e - band + 1, e + 1), np.arange(e + 1, e + 1 + band)
        if r_out.min() < 0 or r_out.max() >= n_r or r_in.min() < 0 or r_in.max() >= n_r:
            continue  # the edge at the scout's border: nothing outside it shows
        if valid is not None and not (valid[r_in, c].all() and valid[r_out, c].all()):
            continue  # a band off the image (sector edge, resampled corner)
        inside_rows.append((r_in, c))
        outside_rows.append((r_out, c))
        used.append(c)
    if not used:
        return 0.0, 0.0, 0.0, 0.0
    ri = np.concatenate([r for r, _ in inside_rows])
    ci = np.concatenate([np.full(r.size, c) for r, c in inside_rows])
    ro = np.concatenate([r for r, _ in outside_rows])
    co = np.concatenate([np.full(r.size, c) for r, c in outside_rows])
    contrast = float(abs(grey[ri, ci].mean() - grey[ro, co].mean()))
    if grey_clean is None:  # the speckle about each column's band mean (shadows and TGC across columns are image)
        groups = inside_rows + outside_rows
        ss = sum(float(((grey[r, c] - grey[r, c].mean()) ** 2).sum()) for r, c in groups)
        dof = sum(r.size for r, _ in groups) - len(groups)  # one mean per band and column
        sd = max(float(np.sqrt(ss / max(dof, 1))), QUANT_SD_GREY)
    else:
        diff = np.concatenate([(grey - grey_clean)[ri, ci], (grey - grey_clean)[ro, co]])
        sd = max(float(diff.std()), QUANT_SD_GREY)
    return contrast / sd, contrast, sd, len(used) * pixel_mm


def scout_footprint(oracle: Any, b: Boundary, view: str, index: tuple[np.ndarray, ...], shape: tuple[int, int]
                    ) -> np.ndarray:
    """The boundary's organ mask projected along the beam (AP: along y; lateral: along x) onto a scout's pixel
    grid, on the columns near its landmark if it names one; `index` = (k, i, rows_inside, cols_inside) as
    CTModel.scout_grid_indices gives them."""
    k, i, rows, cols = index[:4]
    axis = 0 if view == "ap" else 1  # the column's subject axis: x on the AP scout, y on the lateral one
    fp3 = oracle.organ_mask(b.organ).any(axis=1 if view == "ap" else 2)  # (nz, n_cols)
    if b.landmark is not None:
        rt = oracle.runtime
        u = rt.origin_mm[axis] + rt.spacing_mm[axis] * np.arange(fp3.shape[1])
        fp3 = fp3 & (np.abs(u - float(oracle.landmarks[b.landmark][axis])) <= LANDMARK_HALF_WIDTH_MM)[None, :]
    fp = np.zeros(shape, bool)
    fp[np.ix_(rows, cols)] = fp3[np.ix_(k[rows], i[cols])]
    return fp


def ct_scout_measures(task_id: str, subject: str, seed: int, anatomy: str, oracle: Any,
                      scouts: dict[str, tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...]]],
                      pixel_mm: float) -> list[Measure]:
    """Every answer-defining boundary of one CT episode (`anatomy`: scoring.registry.ct.ANATOMY's key) on
    its scouts: view -> (displayed grey, the same without noise, the grid index of scout_footprint)."""
    out: list[Measure] = []
    for view, (grey, grey_clean, index) in scouts.items():
        for b in CT_BOUNDARIES[anatomy]:
            fp = scout_footprint(oracle, b, view, index, grey.shape)
            cnr, con, sd, width = boundary_cnr(grey, grey_clean, fp, b.end, pixel_mm)
            out.append(Measure(task_id, subject, int(seed), b.structure, view, round(float(cnr), 2),
                               round(float(con), 2), round(float(sd), 2), float(width)))
    return out


def best_per_boundary(measures: Iterable[Measure]) -> dict[tuple[str, str, int, str], Measure]:
    """Per (task, subject, seed, structure): the scout on which the boundary shows best."""
    best: dict[tuple[str, str, int, str], Measure] = {}
    for m in measures:
        key = (m.task, m.subject, m.seed, m.structure)
        # a tie (an MR boundary no image shows: all 0) goes to the image whose section comes closest to it
        if key not in best or (m.cnr, -m.short_mm) > (best[key].cnr, -best[key].short_mm):
            best[key] = m
    return best


def failures(measures: Iterable[Measure], bound: float = CNR_BOUND) -> list[Measure]:
    """The boundaries whose best scout stays under the bound."""
    return [m for m in best_per_boundary(measures).values() if m.cnr < bound]


def failure_report(fails: Iterable[Measure]) -> str:
    """One line per boundary under the bound, lowest first: card, structure, subject, seed, its best image and
    (MR) how far that image's section of the organ ends short of the boundary."""
    lines = []
    for m in sorted(fails, key=lambda m: (m.cnr, m.task, m.structure, m.subject, m.seed)):
        where = f"best {m.cnr} on {m.view}"
        if m.section_cnr is not None:
            where += ("; no image in a plane holding its direction cuts the organ" if m.short_mm >= 999.0 else
                      f"; that image's section ends {m.short_mm:g} mm short of it (edge CNR {m.section_cnr})")
        lines.append(f"{m.task} {m.structure} {m.subject} seed {m.seed} ({where})")
    return "\n".join(lines)


def table_rows(measures: Sequence[Measure]) -> list[dict[str, Any]]:
    """Per card and structure: min / median CNR of the best scout over the episodes, per-view medians, the
    worst episode, and how many episodes meet the bound."""
    best = best_per_boundary(measures)
    groups: dict[tuple[str, str], list[Measure]] = {}
    for (task, _, _, structure), m in best.items():
        groups.setdefault((task, structure), []).append(m)
    per_view: dict[tuple[str, str, str], list[float]] = {}
    for m in measures:
        per_view.setdefault((m.task, m.structure, m.view), []).append(m.cnr)
    rows = []
    for (task, structure), ms in sorted(groups.items()):
        worst = min(ms, key=lambda m: m.cnr)
        rows.append({"task": task, "structure": structure, "n": len(ms),
                     "min": worst.cnr, "median": round(statistics.median(m.cnr for m in ms), 2),
                     "ap_median": round(statistics.median(per_view.get((task, structure, "ap"), [0.0])), 2),
                     "lateral_median": round(statistics.median(per_view.get((task, structure, "lateral"), [0.0])), 2),
                     "worst": f"{worst.subject} seed {worst.seed} ({worst.view})",
                     "meet": int(sum(m.cnr >= CNR_BOUND for m in ms))})
    return rows


def card_summary_rows(measures: Sequence[Measure]) -> list[dict[str, Any]]:
    """Per card: its measured structures, the lowest CNR (and where), the median of the structures' median CNRs
    and how many boundary-episodes meet the bound: the README's one-line-per-card view of every table."""
    best = best_per_boundary(measures)
    cards: dict[str, list[Measure]] = {}
    for (task, _, _, _), m in best.items():
        cards.setdefault(task, []).append(m)
    rows = []
    for task, ms in sorted(cards.items()):
        per_structure: dict[str, list[float]] = {}
        for m in ms:
            per_structure.setdefault(m.structure, []).append(m.cnr)
        worst = min(ms, key=lambda m: (m.cnr, m.structure, m.subject, m.seed))
        rows.append({"task": task, "structures": len(per_structure), "min": worst.cnr,
                     "min_where": f"{worst.structure}, {worst.subject} seed {worst.seed}",
                     "median": round(statistics.median(statistics.median(v) for v in per_structure.values()), 2),
                     "meet": int(sum(m.cnr >= CNR_BOUND for m in ms)), "n": len(ms)})
    return rows


def format_card_summary(rows: Sequence[dict[str, Any]]) -> str:
    """The per-card summary as a Markdown table."""
    out = ["| task | structures | lowest CNR (where) | median of structure medians | boundary-episodes >= 3 |",
           "|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['task']} | {r['structures']} | {r['min']:.1f} ({r['min_where']}) | {r['median']:.1f} | "
                   f"{r['meet']}/{r['n']} |")
    return "\n".join(out)


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as a Markdown table."""
    out = ["| task | structure | min CNR | median CNR | AP median | lateral median | worst episode | >= 3 |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['task']} | {r['structure']} | {r['min']:.1f} | {r['median']:.1f} | {r['ap_median']:.1f} | "
                   f"{r['lateral_median']:.1f} | {r['worst']} | {r['meet']}/{r['n']} |")
    return "\n".join(out)


# ---- MR (kidneys on the localizers and the coronal T2 series) ----------------------------------------------
@dataclass(frozen=True)
class MRBoundary:
    """An organ's extreme along a subject-frame direction (x left, y posterior, z head), e.g. a kidney's upper
    pole (+z) or its posterior border (+y)."""

    structure: str
    organ: str
    direction: tuple[float, float, float]
    landmark: str | None = None  # only the organ within NEAR_LANDMARK_MM of this oracle landmark, across the direction


# The renal cards' answers: the coronal slab's FOV (phase F/H) spans the poles, its slab (along y, the slab
# axis of a coronal group) the kidneys' anterior and posterior borders.
MR_KIDNEY_BOUNDARIES: tuple[MRBoundary, ...] = tuple(
    MRBoundary(f"{side} kidney {what}", f"kidney_{side}", d)
    for side in ("left", "right")
    for what, d in (("upper pole", (0.0, 0.0, 1.0)), ("lower pole", (0.0, 0.0, -1.0)),
                    ("anterior border", (0.0, -1.0, 0.0)), ("posterior border", (0.0, 1.0, 0.0))))
IN_PLANE_MIN_COS = 0.9  # a boundary is measured on an image whose plane holds its direction within ~25 deg
# A single slice shows the organ's section, whose edge is the organ's extreme only if the slice passes near
# it: an image shows the boundary when its section ends at most this short of the extreme (CAP_MM: the same
# 10 mm that decides which columns define a CT end). Further short, the edge drawn is another one.
SECTION_CAP_MM = CAP_MM


@dataclass(frozen=True)
class MRView:
    """One image the agent plans on, as displayed: grey (8-bit, the viewport's window), the same without
    noise (None: not formed, the image cuts none of the measured organs), where it lies
    (rendering.geometry.ResliceGrid) and its slice thickness."""

    name: str
    grey: np.ndarray
    grey_clean: np.ndarray | None
    grid: Any
    thickness_mm: float


def section_mask(mask: np.ndarray, origin_mm: Any, spacing_mm: Any, grid: Any, thickness_mm: float,
                 bbox: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """An organ's mask (label grid [k, j, i]) cut by an image's slice as the image forms it (rendering.mr_image
    samples its sub-planes across the thickness, linearly): the pixels at least half inside the organ.
    `bbox` ((k, j, i) lowest and highest index of the organ's voxels) skips the pixels whose samples cannot
    reach the organ (the same mask, less work)."""
    from scipy import ndimage

    from rendering.mr_image import subplane_offsets_mm
    from rendering.geometry import reslice_indices

    spacing = np.asarray(spacing_mm, float)
    if mask.dtype != np.float32:
        mask = mask.astype(np.float32)
    base = reslice_indices(grid, origin_mm, spacing).reshape(3, -1)
    offs = subplane_offsets_mm(thickness_mm, float(spacing.min()))
    step = (grid.pose.normal / spacing)[::-1]
    sel = None
    if bbox is not None:  # a sample point within 1 voxel (trilinear) of the box, at any sub-plane
        slack = np.abs(step) * float(np.max(np.abs(offs))) + 1.0
        lo, hi = np.asarray(bbox[0], float) - slack, np.asarray(bbox[1], float) + slack
        sel = np.flatnonzero(np.all((base >= lo[:, None]) & (base <= hi[:, None]), axis=0))
        base = base[:, sel]
    coords = base[:, None, :] + step[:, None, None] * offs[None, :, None]
    frac = ndimage.map_coordinates(mask, coords, order=1, mode="constant", cval=0.0,
                                   prefilter=False).mean(axis=0)
    if sel is None:
        return (frac >= 0.5).reshape(grid.shape)
    out = np.zeros(grid.shape[0] * grid.shape[1], bool)
    out[sel] = frac >= 0.5
    return out.reshape(grid.shape)


def slab_reaches(points: np.ndarray, pose: Any, thickness_mm: float, reach_mm: float) -> bool:
    """Whether a slice (pose, thickness) can sample any of `points` ((N, 3) subject mm): some point lies within
    half the thickness plus `reach_mm` (a trilinear sample's neighbourhood) of its centre plane."""
    if points.size == 0:
        return False
    n = np.asarray(pose.normal, float)
    along = points @ n - float(np.dot(np.asarray(pose.centre, float), n))
    half = thickness_mm / 2.0 + reach_mm
    return not (along.min() > half or along.max() < -half)


def organ_sections(oracle: Any, organs: Sequence[str], views: Sequence[MRView]) -> dict[tuple[str, int], np.ndarray]:
    """(organ, view index) -> the organ's section on that view (`section_mask`). A slice whose slab (its
    thickness plus a voxel's reach either side) lies wholly outside the organ's extent along the slice normal
    cuts nothing and is not sampled (a multi-slice localizer's far slices: same masks, less work)."""
    rt = oracle.runtime
    reach = float(np.sqrt(3.0) * np.max(rt.spacing_mm))  # a trilinear sample reads voxels this far off
    out: dict[tuple[str, int], np.ndarray] = {}
    for organ in organs:
        voxels = oracle.organ_voxels_mm(organ)
        fmask = bbox = None
        for vi, v in enumerate(views):
            if not slab_reaches(voxels, v.grid.pose, v.thickness_mm, reach):
                out[(organ, vi)] = np.zeros(v.grid.shape, bool)
                continue
            if fmask is None:
                m = oracle.organ_mask(organ)
                fmask = m.astype(np.float32)
                idx = [np.flatnonzero(m.any(axis=axes)) for axes in ((1, 2), (0, 2), (0, 1))]  # k, j, i
                bbox = (np.array([a[0] for a in idx]), np.array([a[-1] for a in idx]))
            out[(organ, vi)] = section_mask(fmask, rt.origin_mm, rt.spacing_mm, v.grid, v.thickness_mm, bbox)
    return out


def _orient(grid: Any, direction: np.ndarray) -> tuple[bool, str, float] | None:
    """How a direction lies on an image: (transpose?, end, pixel mm along it) so that, with the arrays
    transposed when asked, the boundary is the organ's `end` ("top" = lowest row) along rows; None when the
    direction is not in the image plane."""
    cu, cv = float(np.dot(grid.pose.u, direction)), float(np.dot(grid.pose.v, direction))
    if max(abs(cu), abs(cv)) < IN_PLANE_MIN_COS:
        return None
    if abs(cv) >= abs(cu):  # rows run down v: +v is the top
        return False, "top" if cv > 0 else "bottom", float(grid.pixel_mm[1])
    return True, "bottom" if cu > 0 else "top", float(grid.pixel_mm[0])  # columns run along +u


def mr_measures(task_id: str, subject: str, seed: int, oracle: Any, views: Sequence[MRView],
                boundaries: Sequence[MRBoundary] = MR_KIDNEY_BOUNDARIES) -> list[Measure]:
    """Every boundary on every image whose plane holds its direction: the CNR of the organ's section edge
    (boundary_cnr, the answer axis along rows) and how far that section ends short of the organ's extreme."""
    out: list[Measure] = []
    sections = organ_sections(oracle, sorted({b.organ for b in boundaries}), views)
    voxels = {organ: oracle.organ_voxels_mm(organ) for organ in {b.organ for b in boundaries}}
    points: dict[int, np.ndarray] = {}  # view index -> its pixels' subject mm (formed once, where needed)
    for b in boundaries:
        d = np.asarray(b.direction, float)
        true_extreme = float((voxels[b.organ] @ d).max())
        for vi, v in enumerate(views):
            o = _orient(v.grid, d)
            if o is None:
                continue
            sec = sections[(b.organ, vi)]
            transpose, end, px = o
            if not sec.any():  # the slice misses the organ: no section, no edge (boundary_cnr's empty answer)
                out.append(section_measure(task_id, subject, seed, b.structure, v.name, (0.0, 0.0, 0.0, 0.0),
                                           float("inf")))
                continue
            if vi not in points:
                points[vi] = v.grid.points()
            short = true_extreme - float((points[vi][sec] @ d).max())
            g, gc, fp = (v.grey.T, v.grey_clean.T, sec.T) if transpose else (v.grey, v.grey_clean, sec)
            cnr, con, sd, width = boundary_cnr(g, gc, fp, end, px)
            out.append(section_measure(task_id, subject, seed, b.structure, v.name, (cnr, con, sd, width), short))
    return out


def mr_table_rows(measures: Sequence[Measure], section_prefix: str = "localizer") -> list[dict[str, Any]]:
    """Per MR card and structure: min / median CNR of the best image over the episodes, how many meet the
    bound, the worst episode, on which kind of image the boundary shows best (localizer plane or series), how
    many episodes have an image that cuts the organ within SECTION_CAP_MM of the boundary at all, and the
    median section-edge CNR of the localizer images that cut the organ (however far from the boundary)."""
    best = best_per_boundary(measures)
    groups: dict[tuple[str, str], list[Measure]] = {}
    for (task, _, _, structure), m in best.items():
        groups.setdefault((task, structure), []).append(m)
    cut: dict[tuple[str, str], set[tuple[str, int]]] = {}
    loc: dict[tuple[str, str], list[float]] = {}
    for m in measures:
        if m.short_mm <= SECTION_CAP_MM:
            cut.setdefault((m.task, m.structure), set()).add((m.subject, m.seed))
        if m.view.startswith(section_prefix) and m.short_mm < 999.0 and m.section_cnr is not None:
            loc.setdefault((m.task, m.structure), []).append(m.section_cnr)
    rows = []
    for (task, structure), ms in sorted(groups.items()):
        worst = min(ms, key=lambda m: m.cnr)
        kinds: dict[str, int] = {}
        for m in ms:
            if m.cnr > 0:
                kind = m.view if m.view.startswith(section_prefix) else "series"
                kinds[kind] = kinds.get(kind, 0) + 1
        lv = loc.get((task, structure), [])
        rows.append({"task": task, "structure": structure, "n": len(ms), "min": worst.cnr,
                     "median": round(statistics.median(m.cnr for m in ms), 2),
                     "worst": f"{worst.subject} seed {worst.seed}", "meet": int(sum(m.cnr >= CNR_BOUND for m in ms)),
                     "cut": len(cut.get((task, structure), ())), "best_on": kinds,
                     "localizer_section_median": round(statistics.median(lv), 2) if lv else 0.0,
                     "localizer_section_min": round(min(lv), 2) if lv else 0.0})
    return rows


def format_mr_table(rows: Sequence[dict[str, Any]], section_label: str = "localizer") -> str:
    """The MR rows (or the ultrasound rows, `section_label` "live image") as a Markdown table."""
    out = ["| task | structure | min CNR | median CNR | >= 3 | cut within 10 mm | worst episode | best on | "
           f"{section_label} section edge: min / median |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        on = ", ".join(f"{k.replace('localizer ', 'loc ')} {v}" for k, v in sorted(r["best_on"].items()))
        out.append(f"| {r['task']} | {r['structure']} | {r['min']:.1f} | {r['median']:.1f} | {r['meet']}/{r['n']} | "
                   f"{r['cut']}/{r['n']} | {r['worst']} | {on} | {r['localizer_section_min']:.1f} / "
                   f"{r['localizer_section_median']:.1f} |")
    return "\n".join(out)


# ---- oblique boundaries: MR cardiac planning, ultrasound ---------------------------------------------------
# The LV long axis and a kidney's long axis on an ultrasound image lie at any angle on the image: the image is
# resampled (nearest pixel, so the pixel noise keeps its SD) with the boundary's in-plane direction pointing
# up, then boundary_cnr measures it as above. An image measures a boundary whose direction it holds within
# 60 deg (the in-plane share of the direction >= OBLIQUE_MIN_COS): the LV long axis is oblique to every
# localizer plane (30-45 deg out of the transverse one), and the agent plans the long-axis views on them; the
# section rule (SECTION_CAP_MM along the 3D direction) decides whether the section's edge is the boundary.
OBLIQUE_MIN_COS = 0.5
# The mitral valve plane is the LV's basal end at the mitral valve: the LV within this radius of the valve's
# centre, across the long axis (the annulus is about 30 mm across in adults [G]); elsewhere the LV's basal end
# is the outflow tract running into the aortic root, which no planning step uses.
NEAR_LANDMARK_MM = 15.0


@dataclass(frozen=True)
class PlaneImage:
    """One displayed image with its place in the subject: grey (8-bit, as displayed), the same without noise
    (None: ultrasound), the pixels that are image, every pixel centre's subject mm (rows, cols, 3), the
    subject directions of +column and +row (down the screen) and the pixel size (row mm, column mm)."""

    name: str
    grey: np.ndarray
    grey_clean: np.ndarray | None
    valid: np.ndarray | None
    points: np.ndarray
    col_axis: np.ndarray
    row_axis: np.ndarray
    pixel_mm: tuple[float, float]


def resample_up(arrays: Sequence[np.ndarray | None], e_row_mm: float, e_col_mm: float,
                pixel_mm: tuple[float, float]) -> tuple[list[np.ndarray | None], np.ndarray, float]:
    """The arrays resampled (nearest pixel) on a square grid whose up direction is the image direction
    (e_row_mm, e_col_mm) (mm down the rows, mm along the columns; unit), about the image's centre; also the
    mask of output pixels inside the input image and the output pixel size (the input's finer one)."""
    pr, pc = float(pixel_mm[0]), float(pixel_mm[1])
    first = next(a for a in arrays if a is not None)
    nr, nc = first.shape
    px = min(pr, pc)
    n = int(np.ceil(np.hypot(nr * pr, nc * pc) / px)) + 1
    k = (np.arange(n) - (n - 1) / 2.0) * px
    right, up = k[None, :], -k[:, None]  # output column offset (right), row offset (up)
    f_row, f_col = e_col_mm, -e_row_mm  # "right" when e is "up"
    off_row = right * f_row + up * e_row_mm
    off_col = right * f_col + up * e_col_mm
    r = np.rint((nr - 1) / 2.0 + off_row / pr).astype(int)
    c = np.rint((nc - 1) / 2.0 + off_col / pc).astype(int)
    inside = (r >= 0) & (r < nr) & (c >= 0) & (c < nc)
    rc, cc = np.clip(r, 0, nr - 1), np.clip(c, 0, nc - 1)
    out = [None if a is None else np.where(inside, a[rc, cc], 0).astype(a.dtype) for a in arrays]
    return out, inside, px


def oblique_measures(task_id: str, subject: str, seed: int, oracle: Any, images: Sequence[PlaneImage],
                     boundaries: Sequence[MRBoundary], sections: dict[tuple[str, int], np.ndarray]
                     ) -> list[Measure]:
    """Every boundary on every image that holds its direction within 60 deg: the CNR of the organ's section
    edge along the boundary's in-plane direction and how far the section ends short of the organ's extreme
    along the 3D direction (`sections`: (organ, image index) -> the organ's pixels on that image)."""
    out: list[Measure] = []
    for b in boundaries:
        d = np.asarray(b.direction, float)
        d = d / np.linalg.norm(d)
        voxels = oracle.organ_voxels_mm(b.organ)
        near = None
        if b.landmark is not None:
            p = np.asarray(oracle.landmarks[b.landmark], float)

            def near(pts: np.ndarray, p: np.ndarray = p, d: np.ndarray = d) -> np.ndarray:
                r = pts - p
                return np.linalg.norm(r - (r @ d)[..., None] * d, axis=-1) <= NEAR_LANDMARK_MM
            voxels = voxels[near(voxels)]
        true_extreme = float((voxels @ d).max())
        for vi, im in enumerate(images):
            cr, cc = float(im.row_axis @ d), float(im.col_axis @ d)
            share = float(np.hypot(cr, cc))
            if share < OBLIQUE_MIN_COS:
                continue
            sec = sections[(b.organ, vi)]
            if not sec.any():  # the slice misses the organ (boundary_cnr's empty answer, without resampling)
                out.append(section_measure(task_id, subject, seed, b.structure, im.name, (0.0, 0.0, 0.0, 0.0),
                                           float("inf")))
                continue
            if near is not None:
                sec = sec & near(im.points)
            short = true_extreme - float((im.points[sec] @ d).max()) if sec.any() else float("inf")
            valid = np.ones(im.grey.shape, bool) if im.valid is None else im.valid
            (g, gc, fp, ok), _, px = resample_up([im.grey.astype(np.float64),
                                                  None if im.grey_clean is None else im.grey_clean.astype(np.float64),
                                                  sec, valid], cr / share, cc / share, im.pixel_mm)
            cnr, con, sd, width = boundary_cnr(g, gc, fp.astype(bool), "top", px, ok.astype(bool))
            out.append(section_measure(task_id, subject, seed, b.structure, im.name, (cnr, con, sd, width), short))
    return out


def lv_boundaries(oracle: Any) -> tuple[MRBoundary, ...]:
    """The long-axis ends of the LV (its mask: blood pool and myocardium) that define the 2ch / 4ch planes and
    a short-axis stack's base-to-apex coverage: the apex (along the oracle's LV long axis, mitral valve centre
    -> epicardial apex) and the mitral valve plane (against it, the LV within NEAR_LANDMARK_MM of the mitral
    valve centre)."""
    base, apex = oracle.lv_long_axis
    a = (apex - base) / np.linalg.norm(apex - base)
    return (MRBoundary("LV apex", "lv", tuple(float(v) for v in a)),
            MRBoundary("mitral valve plane", "lv", tuple(float(v) for v in -a), landmark="mitral_valve_centre"))


# The shim box's answer: the heart inside the adjust volume, not much more: the heart's six borders (x left,
# y posterior, z head).
HEART_BORDERS: tuple[MRBoundary, ...] = tuple(
    MRBoundary(f"heart {name} border", "heart", d)
    for name, d in (("left", (1.0, 0.0, 0.0)), ("right", (-1.0, 0.0, 0.0)), ("anterior", (0.0, -1.0, 0.0)),
                    ("posterior", (0.0, 1.0, 0.0)), ("superior", (0.0, 0.0, 1.0)), ("inferior", (0.0, 0.0, -1.0))))


def mr_plane_image(v: MRView) -> PlaneImage:
    """An MR view as a PlaneImage (columns along the grid's u, rows down its v)."""
    g = v.grid
    return PlaneImage(v.name, v.grey, v.grey_clean, None, g.points(), np.asarray(g.pose.u, float),
                      -np.asarray(g.pose.v, float), (float(g.pixel_mm[1]), float(g.pixel_mm[0])))


def mr_oblique_measures(task_id: str, subject: str, seed: int, oracle: Any, views: Sequence[MRView],
                        boundaries: Sequence[MRBoundary]) -> list[Measure]:
    """MR boundaries at any angle (the LV's long-axis ends, the heart's borders) on the displayed images."""
    images = [mr_plane_image(v) for v in views]
    sections = organ_sections(oracle, sorted({b.organ for b in boundaries}), views)
    return oblique_measures(task_id, subject, seed, oracle, images, boundaries, sections)


def us_boundaries(axis: Any, col_axis: Any, row_axis: Any, side: str) -> tuple[MRBoundary, ...]:
    """A kidney's boundaries on an ultrasound image: its poles (its 3D long axis, lower -> upper pole:
    scoring.oracles.us.kidney_anatomy) and its capsule across the long axis on the image, near the probe and
    far from it (the in-plane direction perpendicular to the long axis' projection)."""
    a = np.asarray(axis, float)
    cu, cr = float(a @ col_axis), float(a @ row_axis)
    perp = -cr * np.asarray(col_axis, float) + cu * np.asarray(row_axis, float)  # in plane, across the axis
    if np.linalg.norm(perp) < 1e-6:  # the long axis across the image: the capsule along the beam
        perp = np.asarray(row_axis, float)
    perp = perp / np.linalg.norm(perp)
    if perp @ row_axis < 0:
        perp = -perp  # deeper (away from the probe)
    o = f"kidney_{side}"
    t = lambda v: tuple(float(x) for x in v)  # noqa: E731
    return (MRBoundary(f"{side} kidney upper pole", o, t(a)), MRBoundary(f"{side} kidney lower pole", o, t(-a)),
            MRBoundary(f"{side} kidney near capsule", o, t(-perp)),
            MRBoundary(f"{side} kidney far capsule", o, t(perp)))


def measure_dicts(measures: Iterable[Measure]) -> list[dict[str, Any]]:
    return [asdict(m) for m in measures]
