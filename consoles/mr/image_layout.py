"""The MR viewer state (a mixin of MRModel; no Qt): a LayoutState (1/2/4 viewports, active one, window/level,
a graphics mode per viewport) plus which image of the series each viewport shows (with its corner caption), and
whether the shim box is drawn.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from consoles.common.layout_state import ViewportContent
from consoles.mr import mapping
from consoles.mr.series import LOCALIZER_SHORT, Series
from rendering.geometry import orientation_text

__all__ = ["Viewer"]


class Viewer:
    """Viewports, layout, paging, captions and the dump's layout; MRModel supplies the series store."""

    def _apply_layout_spec(self, spec: Mapping[str, Any]) -> None:
        """{"layout", "active" (1-based), "graphics_mode" (every viewport), "shim_box_visible",
        "viewports": [{"row": card queue index or "series": uid, "image": 1-based (default: the middle one),
        "graphics_mode"} or null]}. A localizer's "image" is its plane (1 sagittal, 2 coronal, 3 transverse),
        shown by the plane's middle slice.

        With a seeded `localizer_order`, a localizer's plane k goes where the card put plane order[k]."""
        if "active" in spec:  # first: which viewports a 1x1 or 1x2 layout shows follows the active one
            a = int(spec["active"]) - 1
            self._require(0 <= a < len(self.layout.viewports), f"there is no viewport {a + 1}")
            self.layout.active = a
        if "layout" in spec:
            self.layout.set_layout(str(spec["layout"]))
        if "graphics_mode" in spec:
            self.layout.set_all_graphics_modes(str(spec["graphics_mode"]))
        for i, vp in enumerate(spec.get("viewports") or []):
            if vp is None:
                self.layout.viewports[i] = ViewportContent(graphics_mode=self.layout.viewports[i].graphics_mode)
                continue
            uid = vp["series"] if "series" in vp else self._card_row(int(vp["row"])).series
            self._require(uid is not None, f"viewport {i + 1}: that row has no series")
            s = self.series_by_uid(int(uid))
            k = int(vp["image"]) - 1 if vp.get("image") else s.n_images // 2  # a whole series opens in the middle
            if s.localizer and vp.get("image"):
                plane = self.localizer_order[k] if self.localizer_order is not None else k
                self._require(0 <= plane < len(s.planes), f"viewport {i + 1}: the localizer has no plane {k + 1}")
                k = s.plane_middle(plane)
            self._load(i, int(uid), k)
            if vp.get("graphics_mode"):
                self.layout.viewports[i] = replace(self.layout.viewports[i], graphics_mode=str(vp["graphics_mode"]))
        self.shim_box_visible = bool(spec.get("shim_box_visible", self.shim_box_visible))

    def _viewport(self, i: int) -> int:
        self._require(int(i) in self.layout.visible(), f"Viewport {int(i) + 1} is not shown in this layout.")
        return int(i)

    def _load(self, i: int, series_uid: int, image: int) -> None:
        s = self.series_by_uid(series_uid)
        k = max(0, min(s.n_images - 1, int(image)))
        level, width = s.data.auto_window
        # the viewport keeps its graphics mode; an initial state may fill viewports its layout hides
        self.layout.viewports[i] = replace(self.layout.viewports[i], content=f"series {s.uid}",
                                           window=round(width, 4), level=round(level, 4))
        self.viewport_image[i] = k

    def load_series(self, viewport: int, series_uid: int, image: int | None = None) -> None:
        """Drop a series (or one of its images, 0-based) onto a viewport; a whole series opens in the middle."""
        i = self._viewport(viewport)
        s = self.series_by_uid(series_uid)
        k = s.n_images // 2 if image is None else int(image)
        self._require(0 <= k < s.n_images, f"Series {series_uid} has {s.n_images} images.")
        self._load(i, series_uid, k)
        self._log("series_loaded", viewport=i + 1, series=series_uid, image=k + 1)
        self._changed("layout")

    def viewport_series(self, i: int) -> Series | None:
        c = self.layout.viewports[i].content
        return None if c is None else self.series_by_uid(int(c.split()[1]))

    def page(self, viewport: int, delta: int) -> None:
        """Scroll through the images of the series a viewport shows (clamped at the ends); on a localizer,
        through the parallel slices of the plane it shows."""
        i = self._viewport(viewport)
        s = self.viewport_series(i)
        if s is None:
            return
        ks = s.planes[s.plane_of(self.viewport_image[i])]
        j = max(0, min(len(ks) - 1, ks.index(self.viewport_image[i]) + int(delta)))
        k = ks[j]
        if k != self.viewport_image[i]:
            self.viewport_image[i] = k
            self._changed("layout")

    def set_layout(self, layout: str) -> None:
        try:
            self.layout.set_layout(layout)
        except ValueError as exc:
            self._require(False, str(exc))
        self._log("layout_set", layout=layout)
        self._changed("layout")

    def activate_viewport(self, viewport: int) -> None:
        i = self._viewport(viewport)
        self.layout.activate(i)
        self._log("viewport_activated", viewport=i + 1)
        self._changed("layout")

    def move_viewport_content(self, src: int, dst: int) -> None:
        """Drag what one viewport shows onto another (the source keeps it)."""
        a, b = self._viewport(src), self._viewport(dst)
        self.layout.move_content(a, b)
        self.viewport_image[b] = self.viewport_image[a]
        self._log("viewport_copied", src=a + 1, dst=b + 1)
        self._changed("layout")

    def set_window_level(self, viewport: int, window: float, level: float) -> None:
        """Display only."""
        self.layout.set_window_level(self._viewport(viewport), window, level)
        self._changed("layout")

    def set_graphics_mode(self, mode: str, viewport: int | None = None) -> None:
        """How a viewport (default: the active one; 0-based) draws the open row's planning graphics."""
        i = self.layout.active if viewport is None else self._viewport(viewport)
        try:
            self.layout.set_graphics_mode(mode, i)
        except ValueError as exc:
            self._require(False, str(exc))
        self._log("graphics_mode_set", viewport=i + 1, mode=mode)
        self._changed("layout")

    def graphics_mode(self, i: int) -> str:
        """Graphics mode of viewport i (0-based): "all", "outer" or "off"."""
        return self.layout.viewports[i].graphics_mode

    def set_shim_box_visible(self, visible: bool) -> None:
        self.shim_box_visible = bool(visible)
        self._log("shim_box_shown" if visible else "shim_box_hidden")
        self._changed("layout")

    def select_image(self, series_uid: int, image: int) -> None:
        """Pick one image (0-based) of a series in the series list."""
        s = self.series_by_uid(series_uid)
        self._require(0 <= int(image) < s.n_images, f"Series {series_uid} has {s.n_images} images.")
        self.selected_image = (s.uid, int(image))
        self._log("image_selected", series=s.uid, image=int(image) + 1)
        self._changed("selection")

    def viewport_caption(self, i: int) -> list[str]:
        """The corner text of viewport i: series title, image k/N and orientation ([] when empty); on a
        localizer, the slice's place in its plane's stack. With labels hidden a localizer image shows only its
        list position and slice k/N, nothing that names the plane."""
        s = self.viewport_series(i)
        if s is None:
            return []
        k = self.viewport_image[i]
        if mapping.is_map_series(s):
            return mapping.caption(s, k, orientation_text(s.data[k].pose.normal))
        if s.localizer:
            j, n = s.slice_in_plane(k)
            if self.labels_hidden:
                return [self._image_title(s, k), f"{j}/{n}"]
            name = s.data[k].name
            return [f"Localizer {LOCALIZER_SHORT.get(name, name)}", f"Image {j}/{n}",
                    orientation_text(s.data[k].pose.normal)]
        return [s.name, f"Image {k + 1}/{s.n_images}", orientation_text(s.data[k].pose.normal)]

    def viewport_image_data(self, i: int):
        """The MRImage viewport i shows (None when empty)."""
        s = self.viewport_series(i)
        return None if s is None else s.data[self.viewport_image[i]]

    def _layout_dict(self) -> dict[str, Any]:
        d = self.layout.to_dict()
        for i, vp in enumerate(d["viewports"]):
            vp["window"], vp["level"] = round(vp["window"], 4), round(vp["level"], 4)
            s = self.viewport_series(i)
            k = self.viewport_image[i]
            vp.update({"caption": self.viewport_caption(i),
                       "series": None if s is None else s.uid, "image": None if s is None else k + 1,
                       "n_images": None if s is None else s.n_images,
                       "image_name": None if s is None else s.data[k].name,
                       "orientation": None if s is None else orientation_text(s.data[k].pose.normal)})
            if s is not None and s.localizer:  # which of the plane's parallel slices it shows
                vp["plane_slice"], vp["plane_slices"] = s.slice_in_plane(k)
        d["shim_box_visible"] = self.shim_box_visible
        return d
