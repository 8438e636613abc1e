"""The MR series store: acquired series (images kept in memory, the dump holds their geometry, never pixels)
and the series list (a mixin of MRModel; no Qt).

The series list shows one thumbnail per series, one per plane for localizers (SeriesEntry: the plane's middle
slice; a viewport pages through the plane's parallel slices); with labels hidden (tasks that ask the agent to
recognise views) localizer planes are listed unnamed in a seeded order.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from consoles.mr import mapping
from rendering.geometry import orientation_text
from rendering.mr_image import MRImage, MRSeries, acquire_localizer, acquire_series, localizer_planes

if TYPE_CHECKING:
    from consoles.mr.queue import QueueRow

__all__ = ["Series", "SeriesEntry", "SeriesStore", "LOCALIZER_SHORT"]

LOCALIZER_SHORT = {"sagittal": "sag", "coronal": "cor", "transverse": "tra"}


@dataclass
class Series:
    """An acquired series: geometry and parameters for the dump, images kept in memory."""

    uid: int
    name: str
    row: int
    protocol: str
    t_start: float
    t_end: float
    params: dict[str, Any]
    data: MRSeries = field(repr=False)
    localizer: bool = False
    prior: bool = False  # acquired before this session started (initial state)

    @property
    def n_images(self) -> int:
        return len(self.data)

    @property
    def planes(self) -> list[list[int]]:
        """A localizer's images per plane (0-based indices in slice order; sagittal, coronal, transverse);
        another series is one group of all its images."""
        if not self.localizer:
            return [list(range(self.n_images))]
        return list(localizer_planes(self.data).values())

    def plane_of(self, k: int) -> int:
        """The 0-based plane (group of `planes`) image k belongs to."""
        return next(p for p, ks in enumerate(self.planes) if k in ks)

    def plane_middle(self, plane: int) -> int:
        """The image a plane opens on: its middle slice (through the isocentre)."""
        ks = self.planes[plane]
        return ks[len(ks) // 2]

    def slice_in_plane(self, k: int) -> tuple[int, int]:
        """(1-based position of image k in its plane's stack, the stack's slice count)."""
        ks = self.planes[self.plane_of(k)]
        return ks.index(k) + 1, len(ks)

    def image_dict(self, k: int) -> dict[str, Any]:
        im = self.data[k]
        pose = im.pose
        d = {"index": k + 1, "name": im.name, "orientation": orientation_text(pose.normal),
             "centre_mm": _r(pose.centre), "u": _r(pose.u, 6), "v": _r(pose.v, 6), "normal": _r(pose.normal, 6),
             "shape": list(im.shape), "pixel_mm": _r(im.pixel_mm, 4), "thickness_mm": im.thickness_mm}
        if self.localizer:  # its place in the plane's stack of parallel slices
            d["plane_slice"], d["plane_slices"] = self.slice_in_plane(k)
        return d

    def to_dict(self) -> dict[str, Any]:
        return {"uid": self.uid, "name": self.name, "row": self.row, "protocol": self.protocol,
                "localizer": self.localizer, "prior": self.prior, "n_images": self.n_images,
                "t_start": round(float(self.t_start), 3), "t_end": round(float(self.t_end), 3),
                "noise_sigma": round(float(self.data.noise_sigma), 6), "params": self.params,
                "images": [self.image_dict(k) for k in range(self.n_images)],
                "mapping": self.data.record if mapping.is_map_series(self) else None}


@dataclass(frozen=True)
class SeriesEntry:
    """One thumbnail of the series list: a whole series, or one plane of a localizer series (shown by its middle
    slice).

    `key` is "<series uid>" or "<series uid>.<p>" (p the 1-based plane: sagittal, coronal, transverse); `image`
    is the 0-based image it opens on (None: whole series)."""

    key: str
    series: int
    image: int | None
    title: str
    count_text: str


def _slices_text(n: int) -> str:
    return "" if n == 1 else f"{n} slices"


def _r(a: Any, d: int = 3) -> list[float]:
    return [round(float(x), d) + 0.0 for x in np.asarray(a, float).ravel()]


class SeriesStore:
    """Series lookup, acquisition into a series and the series list; MRModel supplies the rows and the log."""

    def series_by_uid(self, uid: int) -> Series:
        for s in self.series:
            if s.uid == uid:
                return s
        self._require(False, f"There is no series {uid}.")
        raise AssertionError

    def localizer_done(self) -> bool:
        return any(s.localizer for s in self.series)

    def _form_series(self, row: QueueRow, prior: bool) -> Series:
        p, pr = row.params, row.proto
        uid = len(self.series) + 1
        seed = (self.task_id, self.seed, uid)  # a repeated row gets new noise
        if mapping.is_mapping(pr):
            assert row.t_start is not None
            data = mapping.acquire(self.subject, p, pr, self.heart_rate_bpm, self.field_t, seed, row.t_start)
        elif pr.is_localizer:
            data = acquire_localizer(self.subject, self.isocentre_mm, p.sequence(), field_t=self.field_t,
                                     fov_mm=p.fov_read_mm, matrix=int(p.matrix), thickness_mm=p.thickness_mm,
                                     averages=p.averages, seed=seed, stacks=pr.localizer_stacks)
        else:
            data = acquire_series(self.subject, p.slice_group(), p.sequence(), field_t=self.field_t,
                                  averages=p.averages, seed=seed)
        assert row.t_start is not None and row.t_end is not None
        return Series(uid, row.name, row.uid, row.protocol, row.t_start, row.t_end, p.to_dict(), data,
                      pr.is_localizer, prior)

    # ---- series list ----------------------------------------------------------------------------
    def _image_order(self, s: Series) -> list[int]:
        """The order a localizer's planes (0-based) are listed in: the seeded order when labels are hidden."""
        n = len(s.planes)
        if not self.labels_hidden:
            return list(range(n))
        if self.localizer_order is not None and sorted(self.localizer_order) == list(range(n)):
            return list(self.localizer_order)
        return [int(k) for k in self.rng("series_list", s.uid).permutation(n)]

    def _image_title(self, s: Series, k: int) -> str:
        """A localizer image's title: its plane's short name, or its plane's list position with labels hidden."""
        if self.labels_hidden:
            return f"Image {self._image_order(s).index(s.plane_of(k)) + 1}"
        name = s.data[k].name
        return f"{s.uid}  Localizer {LOCALIZER_SHORT.get(name, name)}"

    def series_entries(self) -> list[SeriesEntry]:
        """The series list's thumbnails in screen order: one per plane for localizers, else one per series."""
        out: list[SeriesEntry] = []
        for s in self.series:
            if mapping.is_map_series(s):
                out += [SeriesEntry(*e) for e in mapping.series_entries(s)]
            elif s.localizer:
                out += [SeriesEntry(f"{s.uid}.{p + 1}", s.uid, s.plane_middle(p),
                                    self._image_title(s, s.plane_middle(p)), _slices_text(len(s.planes[p])))
                        for p in self._image_order(s)]
            else:
                n = s.n_images
                out.append(SeriesEntry(str(s.uid), s.uid, None, f"{s.uid}  {s.name}",
                                       f"{n} image{'s' if n != 1 else ''}"))
        return out

    def _entry(self, key: str) -> SeriesEntry:
        for e in self.series_entries():
            if e.key == key:
                return e
        self._require(False, f"There is no entry {key} in the series list.")
        raise AssertionError

    def entry_image(self, key: str) -> MRImage:
        """The thumbnail image of a series-list entry: that image, or the middle image of the series."""
        e = self._entry(key)
        s = self.series_by_uid(e.series)
        return s.data[s.n_images // 2 if e.image is None else e.image]

    def load_entry(self, viewport: int, key: str) -> None:
        """Drag a series-list entry onto a viewport (0-based)."""
        e = self._entry(key)
        self.load_series(viewport, e.series, e.image)

    def select_entry(self, key: str) -> None:
        """Click an entry of the series list: it becomes the selected image (or series)."""
        e = self._entry(key)
        self.selected_image = (e.series, e.image)
        self.selected_entry = key
        self._log("image_selected", key=key, series=e.series, image=None if e.image is None else e.image + 1)
        self._changed("selection")

    def select_list_item(self, position: int) -> None:
        """Click the series list's `position`-th thumbnail (1-based, screen order): what a click on the list
        picks, whatever image the seeded order put there."""
        entries = self.series_entries()
        self._require(1 <= int(position) <= len(entries), f"The series list has no entry {position}.")
        self.select_entry(entries[int(position) - 1].key)
