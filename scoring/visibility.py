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


def boundary_cnr(grey: np.ndarray, grey_clean: np.ndarray, footprint: np.ndarray, end: str,
                 pixel_mm: float) -> tuple[float, float, float, float]:
    """(CNR, contrast, noise SD, width mm) of one organ end on one displayed scout.

    `grey` is the displayed image, `grey_clean` the same without noise, `footprint` the organ's projection on
    the same pixel grid (rows top = superior). Rows are the answer axis (z)."""
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
    noise, where it lies (rendering.geometry.ResliceGrid) and its slice thickness."""

    name: str
    grey: np.ndarray
    grey_clean: np.ndarray
    grid: Any
    thickness_mm: float


def section_mask(mask: np.ndarray, origin_mm: Any, spacing_mm: Any, grid: Any, thickness_mm: float) -> np.ndarray:
    """An organ's mask (label grid [k, j, i]) cut by an image's slice as the image forms it (rendering.mr_image
    samples its sub-planes across the thickness, linearly): the pixels at least half inside the organ."""
    from scipy import ndimage

    from rendering.mr_image import subplane_offsets_mm
    from rendering.geometry import reslice_indices

    spacing = np.asarray(spacing_mm, float)
    base = reslice_indices(grid, origin_mm, spacing).reshape(3, -1)
    offs = subplane_offsets_mm(thickness_mm, float(spacing.min()))
    step = (grid.pose.normal / spacing)[::-1]
    coords = base[:, None, :] + step[:, None, None] * offs[None, :, None]
    frac = ndimage.map_coordinates(mask.astype(np.float32), coords, order=1, mode="constant", cval=0.0,
                                   prefilter=False).mean(axis=0)
    return (frac >= 0.5).reshape(grid.shape)


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
    rt = oracle.runtime
    out: list[Measure] = []
    sections: dict[tuple[str, int], np.ndarray] = {}
    for b in boundaries:
        d = np.asarray(b.direction, float)
        mask = oracle.organ_mask(b.organ)
        true_extreme = float((oracle.organ_voxels_mm(b.organ) @ d).max())
        for vi, v in enumerate(views):
            o = _orient(v.grid, d)
            if o is None:
                continue
            key = (b.organ, vi)
            if key not in sections:
                sections[key] = section_mask(mask, rt.origin_mm, rt.spacing_mm, v.grid, v.thickness_mm)
            sec = sections[key]
            transpose, end, px = o
            if sec.any():
                short = true_extreme - float((v.grid.points()[sec] @ d).max())
            else:
                short = float("inf")
            g, gc, fp = (v.grey.T, v.grey_clean.T, sec.T) if transpose else (v.grey, v.grey_clean, sec)
            cnr, con, sd, width = boundary_cnr(g, gc, fp, end, px)
            shows = short <= SECTION_CAP_MM
            out.append(Measure(task_id, subject, int(seed), b.structure, v.name,
                               round(float(cnr), 2) if shows else 0.0, round(float(con), 2), round(float(sd), 2),
                               float(width), round(short, 1) if np.isfinite(short) else 999.0,
                               round(float(cnr), 2)))
    return out


def mr_table_rows(measures: Sequence[Measure]) -> list[dict[str, Any]]:
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
        if m.view.startswith("localizer") and m.short_mm < 999.0 and m.section_cnr is not None:
            loc.setdefault((m.task, m.structure), []).append(m.section_cnr)
    rows = []
    for (task, structure), ms in sorted(groups.items()):
        worst = min(ms, key=lambda m: m.cnr)
        kinds: dict[str, int] = {}
        for m in ms:
            if m.cnr > 0:
                kind = m.view if m.view.startswith("localizer") else "series"
                kinds[kind] = kinds.get(kind, 0) + 1
        lv = loc.get((task, structure), [])
        rows.append({"task": task, "structure": structure, "n": len(ms), "min": worst.cnr,
                     "median": round(statistics.median(m.cnr for m in ms), 2),
                     "worst": f"{worst.subject} seed {worst.seed}", "meet": int(sum(m.cnr >= CNR_BOUND for m in ms)),
                     "cut": len(cut.get((task, structure), ())), "best_on": kinds,
                     "localizer_section_median": round(statistics.median(lv), 2) if lv else 0.0,
                     "localizer_section_min": round(min(lv), 2) if lv else 0.0})
    return rows


def format_mr_table(rows: Sequence[dict[str, Any]]) -> str:
    """The MR rows as a Markdown table."""
    out = ["| task | structure | min CNR | median CNR | >= 3 | cut within 10 mm | worst episode | best on | "
           "localizer section edge: min / median |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        on = ", ".join(f"{k.replace('localizer ', 'loc ')} {v}" for k, v in sorted(r["best_on"].items()))
        out.append(f"| {r['task']} | {r['structure']} | {r['min']:.1f} | {r['median']:.1f} | {r['meet']}/{r['n']} | "
                   f"{r['cut']}/{r['n']} | {r['worst']} | {on} | {r['localizer_section_min']:.1f} / "
                   f"{r['localizer_section_median']:.1f} |")
    return "\n".join(out)


def measure_dicts(measures: Iterable[Measure]) -> list[dict[str, Any]]:
    return [asdict(m) for m in measures]
