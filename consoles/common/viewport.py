"""VTK image viewport embedded in Qt (QVTKRenderWindowInteractor under xcb).

Shows one 2D image in image-plane millimetres with window/level and planning overlays, and
reports mouse events in image-plane coordinates to its owner. The camera is fixed (parallel
projection fitted to a view box), so the pixel <-> mm mapping is exact and exported for the
reference solvers through `to_screen`, `pixel_transform` and `export_geometry`.

Optionally the image lies in a plane of the subject (`set_plane_pose`, `set_resliced`): its
(u, v) are then that PlanePose's in-plane millimetres, and overlays given in plane mm land on
the anatomy they describe. An optional colour map (`set_color_map`) replaces the grey ramp and
adds a labelled colour bar. With neither option used the viewport draws exactly what it always did.

The image and the overlays are two renderer layers of the viewport's render window; a frame that
changes only overlays puts back the image layer's last pixels instead of drawing it again
(`viewport_image_layer.ImageLayerCache`), with the same pixels as a full draw.
"""
from __future__ import annotations

import ctypes
import ctypes.util
from typing import Callable

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets
from vtkmodules.qt.QVTKRenderWindowInteractor import QVTKRenderWindowInteractor
from vtkmodules.util import numpy_support
from vtkmodules.vtkCommonCore import vtkLookupTable, vtkPoints, vtkUnsignedCharArray
from vtkmodules.vtkCommonDataModel import vtkCellArray, vtkImageData, vtkPolyData
from vtkmodules.vtkInteractionStyle import vtkInteractorStyleUser
from vtkmodules.vtkRenderingCore import (
    vtkActor2D,
    vtkImageActor,
    vtkPolyDataMapper2D,
    vtkRenderer,
    vtkTextActor,
)
import vtkmodules.vtkRenderingOpenGL2  # noqa: F401  (registers the OpenGL backend)
import vtkmodules.vtkRenderingFreeType  # noqa: F401  (text rendering)

from consoles.common.determinism import FONT_FILE_CANDIDATES, _first_existing
from consoles.common.colormaps import ColorMap
from consoles.common.overlays import (Box, DragController, Handle, Label, Line, OverlaySet, PixelTransform, Polyline,
                                      Text, handle_outline)
from consoles.common.viewport_image_layer import ImageLayerCache
from rendering.geometry import PlanePose, ResliceGrid

COLOR_BAR_WIDTH_PX = 14
COLOR_BAR_TEXT_PX = 13

_libx11 = ctypes.CDLL(ctypes.util.find_library("X11") or "libX11.so.6")
_libx11.XSync.argtypes = [ctypes.c_void_p, ctypes.c_int]

MouseCallback = Callable[[str, float, float, QtCore.Qt.MouseButton], None]

# How pointer motion and frames reach the owner and the screen. X may batch a drag's motion events
# differently from run to run, so under the runner ("settle") motion is coalesced and delivered once
# per step (at settle time, or just before the release), and a viewport whose scene changed is
# rendered once, by the settle (`render_pending`), after every change of the step: a drag's press,
# motion and release cost one frame, not one per event. For a person ("timer") motion arrives once
# per event-loop pass and Qt's paint events render.
MOTION_DELIVERY = {"mode": "timer"}


def frames_at_settle() -> bool:
    """True under the runner: frames are rendered by the settle, not by Qt paint events."""
    return MOTION_DELIVERY["mode"] == "settle"


class ImageViewport(QVTKRenderWindowInteractor):
    """A fixed-camera 2D image view with window/level (right-drag) and overlays."""

    def __init__(self, parent: QtWidgets.QWidget | None, name: str, placeholder: str = "No image") -> None:
        super().__init__(parent)
        self.setObjectName(name)
        self.name = name
        window = self.GetRenderWindow()
        # layer 0: the image and the placeholder; layer 1: overlays and the colour bar, drawn over it.
        # A frame that only changes layer 1 puts layer 0's last pixels back (ImageLayerCache).
        self._renderer = vtkRenderer()
        self._renderer.SetBackground(0.0, 0.0, 0.0)
        self._overlay_renderer = vtkRenderer()
        self._overlay_renderer.SetLayer(1)
        self._overlay_renderer.InteractiveOff()
        window.SetNumberOfLayers(2)
        window.AddRenderer(self._renderer)
        window.AddRenderer(self._overlay_renderer)
        window.SetMultiSamples(0)  # identical pixels across runs and drivers
        self._image_layer = ImageLayerCache(window, self._renderer, self._overlay_renderer, self._image_layer_key)
        self._interactor_style = vtkInteractorStyleUser()
        window.GetInteractor().SetInteractorStyle(self._interactor_style)
        self._image_actor = vtkImageActor()
        self._image_actor.GetProperty().SetInterpolationTypeToLinear()
        self._image_actor.VisibilityOff()
        self._renderer.AddActor(self._image_actor)
        self._image = vtkImageData()
        self._overlay_actors: dict[tuple, object] = {}  # (item, camera key) -> actor, reused while unchanged
        self._undrawn: set[tuple] = set()  # wanted items that draw nothing (hidden handles)
        self._needs_render = True  # the scene changed since the last frame
        self.frames_rendered = 0  # every Render() of this viewport, for the settle's frame count
        self._rendered_size: tuple[int, int] | None = None  # widget size of the last frame
        self._resized_since_frame = True  # any resize since the last frame, even back to its size
        self._view = (0.0, 1.0, 0.0, 1.0)  # u0, u1, v0, v1 the camera fits
        self._window, self._level = 400.0, 40.0
        self._font_file = _first_existing(FONT_FILE_CANDIDATES)
        self._placeholder_text = placeholder
        self._placeholder = self._make_text(placeholder, 16, (0.6, 0.63, 0.68))
        self._placeholder.GetTextProperty().SetJustificationToCentered()
        self._placeholder.GetTextProperty().SetVerticalJustificationToCentered()
        self._renderer.AddViewProp(self._placeholder)
        self.mouse_callback: MouseCallback | None = None
        # Called after a resize: overlays are laid out in pixels (and screen-anchored labels at
        # the edges), so whoever builds them must build them again at the new size.
        self.resize_callback: Callable[["ImageViewport"], None] | None = None
        self.wheel_callback: Callable[[int], None] | None = None
        self.window_level_callback: Callable[[float, float], None] | None = None
        self.setMouseTracking(False)
        self.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        self.overlays = OverlaySet()  # what is on show: drawn, and hit-tested by `drag`
        self.reset_input_state()
        self._pose: PlanePose | None = None
        self._cmap: ColorMap | None = None
        self._cmap_title = ""
        self._lut: vtkLookupTable | None = None
        self._color_bar_actors: list = []
        self._color_bar_texts: dict[str, vtkTextActor] = {}

    # ---- image and camera -------------------------------------------------------------
    def set_image(self, pixels: np.ndarray | None, u0: float = 0.0, v0: float = 0.0,
                  du: float = 1.0, dv: float = 1.0) -> None:
        """Show `pixels` (rows top->bottom, cols left->right). Row 0 is the top (highest v)."""
        if pixels is None:
            self._image_actor.VisibilityOff()
            self._placeholder.SetVisibility(True)
            self._fit_camera()
            self.refresh()
            return
        arr = np.ascontiguousarray(np.flipud(pixels), dtype=np.float32)  # VTK rows go up
        rows, cols = arr.shape
        img = vtkImageData()
        img.SetDimensions(cols, rows, 1)
        img.SetSpacing(du, dv, 1.0)
        img.SetOrigin(u0, v0 - (rows - 1) * dv, 0.0)
        vtk_arr = numpy_support.numpy_to_vtk(arr.ravel(), deep=True)
        img.GetPointData().SetScalars(vtk_arr)
        self._image = img
        self._image_actor.SetInputData(img)
        self._image_actor.VisibilityOn()
        self._placeholder.SetVisibility(False)
        self._apply_window_level()
        self.refresh()

    def set_resliced(self, pixels: np.ndarray | None, grid: ResliceGrid) -> None:
        """Show an image sampled on `grid` (rendering.geometry.reslice): the viewport's plane
        becomes the grid's pose and the image sits where the grid's pixels are."""
        self._pose = grid.pose
        self.set_image(pixels, *grid.placement())

    def set_plane_pose(self, pose: PlanePose | None) -> None:
        """Declare the subject plane the image lies in (None: a projection or unplaced image)."""
        self._pose = pose

    @property
    def plane_pose(self) -> PlanePose | None:
        return self._pose

    def plane_to_subject(self, u: float, v: float) -> np.ndarray:
        """Subject-frame point (mm) of plane point (u, v); needs a plane pose."""
        if self._pose is None:
            raise ValueError(f"viewport {self.name} has no plane pose")
        return self._pose.to_subject(u, v)

    def set_placeholder(self, text: str) -> None:
        self._placeholder_text = text
        self._placeholder.SetInput(text)
        self.refresh()

    def set_view_box(self, u0: float, u1: float, v0: float, v1: float) -> None:
        """The image-plane region (mm) the camera fits into the widget (aspect preserved)."""
        self._view = (u0, u1, v0, v1)
        self._fit_camera()
        self.refresh()

    def set_window_level(self, window: float, level: float) -> None:
        self._window, self._level = max(1.0, float(window)), float(level)
        self._apply_window_level()
        if self._cmap is not None:
            self._update_color_bar()
        self.refresh()

    def set_color_map(self, cmap: ColorMap | None, title: str = "") -> None:
        """Colour the image through `cmap` over the window/level range and show a colour bar
        labelled with that range, the map's unit and `title`; None returns to the grey ramp."""
        self._cmap = cmap
        self._cmap_title = title
        if cmap is None:
            self._lut = None
            self._image_actor.GetProperty().SetLookupTable(None)
        else:
            lut = vtkLookupTable()
            rgba = cmap.rgba_bytes()
            lut.SetNumberOfTableValues(len(rgba))
            lut.SetTable(numpy_support.numpy_to_vtk(rgba, deep=True,
                                                    array_type=numpy_support.get_vtk_array_type(np.uint8)))
            lut.SetRange(0.0, 1.0)
            lut.UseBelowRangeColorOff()
            lut.UseAboveRangeColorOff()
            self._lut = lut
            prop = self._image_actor.GetProperty()
            prop.SetLookupTable(lut)
            prop.UseLookupTableScalarRangeOff()  # window/level set the table's range
        self._apply_window_level()
        self._update_color_bar()
        self.refresh()

    @property
    def color_map(self) -> ColorMap | None:
        return self._cmap

    def color_range(self) -> tuple[float, float]:
        """Values shown at the low and high end of the grey ramp or colour map."""
        return self._level - self._window / 2.0, self._level + self._window / 2.0

    @property
    def window_level(self) -> tuple[float, float]:
        return self._window, self._level

    def _apply_window_level(self) -> None:
        prop = self._image_actor.GetProperty()
        prop.SetColorWindow(self._window)
        prop.SetColorLevel(self._level)

    def _scale(self) -> tuple[float, float, float]:
        """(pixels per mm, centre u, centre v) for the current widget size and view box."""
        u0, u1, v0, v1 = self._view
        w, h = max(1, self.width()), max(1, self.height())
        k = min(w / max(1e-6, u1 - u0), h / max(1e-6, v1 - v0))
        return k, (u0 + u1) / 2.0, (v0 + v1) / 2.0

    def _update_color_bar(self) -> None:
        for a in self._color_bar_actors:
            self._overlay_renderer.RemoveViewProp(a)
        self._color_bar_actors = []
        if self._cmap is None:
            return
        w, h = self.width(), self.height()
        x1 = w - 10
        x0 = x1 - COLOR_BAR_WIDTH_PX
        top = 44  # leaves the viewport's top-left title row free; pixels, y down
        bottom = top + int(max(60, min(200, 0.4 * h)))
        rgba = self._cmap.rgba_bytes()
        n = len(rgba)
        points, cells = vtkPoints(), vtkCellArray()
        colors = vtkUnsignedCharArray()
        colors.SetNumberOfComponents(4)
        for i in range(n):  # one quad per table entry, low values at the bottom
            ya = bottom - (bottom - top) * i / n
            yb = bottom - (bottom - top) * (i + 1) / n
            base = points.GetNumberOfPoints()
            for x, y in ((x0, ya), (x1, ya), (x1, yb), (x0, yb)):
                points.InsertNextPoint(x, h - y, 0.0)
            cells.InsertNextCell(4)
            for j in range(4):
                cells.InsertCellPoint(base + j)
            colors.InsertNextTuple4(*map(int, rgba[i]))
        poly = vtkPolyData()
        poly.SetPoints(points)
        poly.SetPolys(cells)
        poly.GetCellData().SetScalars(colors)
        mapper = vtkPolyDataMapper2D()
        mapper.SetInputData(poly)
        mapper.SetColorModeToDirectScalars()
        mapper.SetScalarModeToUseCellData()
        bar = vtkActor2D()
        bar.SetMapper(mapper)
        frame = self._polyline_actor([(x0, top), (x1, top), (x1, bottom), (x0, bottom)], (0.8, 0.8, 0.8), 1.0,
                                     closed=True)
        lo, hi = self.color_range()
        unit = f" {self._cmap.unit}" if self._cmap.unit else ""
        # (name, text, x of the right end, y of the middle): the range ends left of the bar, the
        # title above it
        texts = [("colorbar.max", f"{_fmt(hi)}{unit}", x0 - 6, top),
                 ("colorbar.min", f"{_fmt(lo)}{unit}", x0 - 6, bottom)]
        if self._cmap_title:
            texts.append(("colorbar.title", self._cmap_title, x1, top - 20))
        self._color_bar_actors = [bar, frame]
        self._color_bar_texts = {}
        for name, text, x, y in texts:
            t = self._make_text(text, COLOR_BAR_TEXT_PX, (0.95, 0.95, 0.95), background=True)
            tp = t.GetTextProperty()
            tp.SetJustificationToRight()
            tp.SetVerticalJustificationToCentered()
            t.SetPosition(x, h - y)
            self._color_bar_actors.append(t)
            self._color_bar_texts[name] = t
        for a in self._color_bar_actors:
            self._overlay_renderer.AddViewProp(a)

    def _fit_camera(self) -> None:
        k, cu, cv = self._scale()
        cam = self._renderer.GetActiveCamera()
        cam.ParallelProjectionOn()
        cam.SetFocalPoint(cu, cv, 0.0)
        cam.SetPosition(cu, cv, 1000.0)
        cam.SetViewUp(0.0, 1.0, 0.0)
        cam.SetParallelScale(self.height() / (2.0 * k))
        self._renderer.ResetCameraClippingRange(cu - 1e4, cu + 1e4, cv - 1e4, cv + 1e4, -10, 10)
        self._placeholder.SetPosition(self.width() / 2.0, self.height() / 2.0)

    def reset_input_state(self) -> None:
        """No drag, window/level drag or coalesced motion under way (as built; a console reset)."""
        self._wl_drag: tuple[float, float, float, float] | None = None
        self._pending_move: tuple[float, float, QtCore.Qt.MouseButton] | None = None
        self._move_timer_armed = False
        self.drag = DragController()  # owners feed it plane coordinates from mouse_callback

    def resizeEvent(self, ev: QtGui.QResizeEvent) -> None:  # noqa: N802
        super().resizeEvent(ev)
        if ev.size() != ev.oldSize():
            # Remembered until the next frame, whatever size the viewport ends at: a layout switch
            # passes it through sizes it never renders at (2x2 -> 1x1 -> 2x2 took viewport 2 through
            # 400x96 back to its own 284x248), and Mesa's drawable keeps the last size it saw.
            self._resized_since_frame = True
            self._image_layer.invalidate()
        self._fit_camera()
        if self._cmap is not None:
            self._update_color_bar()
        if self.resize_callback is not None and ev.size() != ev.oldSize():
            self.resize_callback(self)

    # ---- coordinates ------------------------------------------------------------------
    def to_widget(self, u: float, v: float) -> tuple[float, float]:
        """Image-plane mm -> widget pixel (origin top-left, y down)."""
        k, cu, cv = self._scale()
        return (u - cu) * k + self.width() / 2.0, self.height() / 2.0 - (v - cv) * k

    def to_plane(self, x: float, y: float) -> tuple[float, float]:
        """Widget pixel -> image-plane mm."""
        k, cu, cv = self._scale()
        return (x - self.width() / 2.0) / k + cu, (self.height() / 2.0 - y) / k + cv

    def to_screen(self, u: float, v: float) -> tuple[int, int]:
        x, y = self.to_widget(u, v)
        g = self.mapToGlobal(QtCore.QPoint(0, 0))
        return int(round(g.x() + x)), int(round(g.y() + y))

    def pixels_per_mm(self) -> float:
        return self._scale()[0]

    def pixel_transform(self) -> PixelTransform:
        """Plane mm -> widget pixel as a pure transform (for overlays.hit_test and the drag controller)."""
        k, cu, cv = self._scale()
        return PixelTransform(k, self.width() / 2.0 - cu * k, self.height() / 2.0 + cv * k)

    def screen_transform(self) -> PixelTransform:
        """Plane mm -> screen pixel."""
        t = self.pixel_transform()
        g = self.mapToGlobal(QtCore.QPoint(0, 0))
        return PixelTransform(t.k, t.ox + g.x(), t.oy + g.y())

    def export_geometry(self) -> dict:
        """Everything a solver or grounding export needs to act on this viewport: its screen rect,
        plane mm -> screen transform, plane pose (subject frame), view box, window/level, colour
        map and the screen position and role of every handle on show."""
        g = self.mapToGlobal(QtCore.QPoint(0, 0))
        st = self.screen_transform()
        handles = {}
        for h in self.overlays.handles():
            x, y = st.to_pixel(h.u, h.v)
            handles[h.name] = {"x": x, "y": y, "role": h.role, "target": h.acts_on, "span": h.span}
        return {"rect": [g.x(), g.y(), self.width(), self.height()], "transform": st.to_dict(),
                "pose": None if self._pose is None else self._pose.to_dict(), "view_box": list(self._view),
                "window_level": [self._window, self._level],
                "color_map": None if self._cmap is None else self._cmap.name, "handles": handles}

    # ---- overlays ---------------------------------------------------------------------
    def set_overlays(self, overlays: OverlaySet) -> None:
        """Show exactly these overlay items. Actors of unchanged items are kept, and a changed item
        takes over its predecessor's actor (same name and kind), since building (and rasterizing
        text for) every actor again was the dominant overlay cost of a planning drag. Nothing
        changed: no new frame.

        Drawing order is what it always was: kept actors keep their places, changed and new ones
        go to the end in `overlays` order, and whenever a graphic moved there the labels follow
        it, so a range edge or a slice line crossing a label never cuts through its text."""
        self.overlays = overlays
        camera_key = (self._view, self.width(), self.height())
        wanted = {(item, camera_key): item for item in overlays.primitives()}
        if wanted.keys() == self._overlay_actors.keys() | self._undrawn:
            return
        props = self._overlay_renderer.GetViewProps()
        spare: dict[tuple, tuple] = {}  # (kind, name) -> (item, actor) no longer wanted
        for key in [k for k in self._overlay_actors if k not in wanted]:
            spare.setdefault((type(key[0]), key[0].name), (key[0], self._overlay_actors.pop(key)))
        self._undrawn = set()
        moved_graphics = False
        for key, item in wanted.items():
            if key in self._overlay_actors:
                continue
            old, actor = spare.pop((type(item), item.name), (None, None))
            if actor is not None and self._update_overlay_actor(actor, old, item):
                props.RemoveItem(actor)  # to the end of the drawing order, as a new actor would go
                props.AddItem(actor)
            else:
                if actor is not None:
                    self._overlay_renderer.RemoveViewProp(actor)
                actor = self._make_overlay_actor(item)
                if actor is None:
                    self._undrawn.add(key)
                    continue
                self._overlay_renderer.AddViewProp(actor)
            self._overlay_actors[key] = actor
            moved_graphics |= not isinstance(item, Label)
        for _, actor in spare.values():
            self._overlay_renderer.RemoveViewProp(actor)
        if moved_graphics:
            for (item, _), actor in self._overlay_actors.items():
                if isinstance(item, Label):
                    # reordered within the renderer's prop list: RemoveViewProp would also free
                    # the label's rasterized text, to be made again at the next render
                    props.RemoveItem(actor)
                    props.AddItem(actor)
        self.refresh()

    def label_rects(self) -> dict[str, list[int]]:
        """Screen rectangles [x, y, w, h] of the overlay labels on show, by label name, and of the
        colour bar's texts (for the geometry export: grounding data and the OCR legibility tests)."""
        out: dict[str, list[int]] = {}
        g = self.mapToGlobal(QtCore.QPoint(0, 0))
        h = self.height()
        texts = [(item.name, actor) for (item, _), actor in self._overlay_actors.items() if isinstance(item, Label)]
        if self._cmap is not None:
            texts += list(self._color_bar_texts.items())
        for name, actor in texts:
            b = [0.0] * 4
            # xmin, xmax, ymin, ymax relative to the actor's position (display pixels, y up)
            actor.GetBoundingBox(self._overlay_renderer, b)
            px, py = actor.GetPosition()
            x0, x1, y0, y1 = b
            out[name] = [int(round(g.x() + px + x0)), int(round(g.y() + h - (py + y1))),
                         int(round(x1 - x0)), int(round(y1 - y0))]
        return out

    def _polyline_actor(self, pts_px: list[tuple[float, float]], color, width: float, closed=False,
                        dashed=False) -> vtkActor2D:
        mapper = vtkPolyDataMapper2D()
        mapper.SetInputData(_polyline_data(self._segment_points(pts_px, closed, dashed)))
        actor = vtkActor2D()
        actor.SetMapper(mapper)
        actor.GetProperty().SetColor(*color)
        actor.GetProperty().SetLineWidth(width)
        return actor

    def _segment_points(self, pts_px: list[tuple[float, float]], closed: bool, dashed: bool) -> np.ndarray:
        """(2n, 3) float32 end points of the n line segments through widget pixels (y down), in VTK
        display coordinates (y up); float32 is what vtkPoints stores."""
        h = self.height()
        segs = list(zip(pts_px, pts_px[1:] + (pts_px[:1] if closed else [])))
        flat = [p for (x0, y0), (x1, y1) in segs for p in (_dash(x0, y0, x1, y1) if dashed else [(x0, y0, x1, y1)])]
        xyz = np.zeros((2 * len(flat), 3), dtype=np.float32)
        if flat:
            ends = np.asarray(flat, dtype=np.float64).reshape(-1, 2)
            xyz[:, 0] = ends[:, 0]
            xyz[:, 1] = h - ends[:, 1]
        return xyz

    def _graphic_path(self, item) -> tuple[list[tuple[float, float]], bool, bool, float] | None:
        """(widget pixel points, closed, dashed, line width) of a drawn graphic item, None if it
        draws nothing (a hidden handle) or is not a graphic."""
        if isinstance(item, Line):
            return ([self.to_widget(item.u0, item.v0), self.to_widget(item.u1, item.v1)], False, item.dashed,
                    item.width)
        if isinstance(item, Polyline):
            return [self.to_widget(u, v) for u, v in item.points], item.closed, item.dashed, item.width
        if isinstance(item, Box):
            a = self.to_widget(item.u0, item.v0)
            b = self.to_widget(item.u1, item.v1)
            return [(a[0], a[1]), (b[0], a[1]), (b[0], b[1]), (a[0], b[1])], True, False, item.width
        if isinstance(item, Handle) and item.visible:
            x, y = self.to_widget(item.u, item.v)
            return handle_outline(item, x, y), True, False, 2.0  # a round grip says "turn me"
        return None

    def _label_position(self, item: Label) -> tuple[float, float]:
        """Display position (VTK pixels, y up) of a label's anchor."""
        if item.screen_anchored:
            x, y = item.u, item.v
        else:
            x, y = self.to_widget(item.u, item.v)
        if isinstance(item, Text):
            x, y = x + item.offset_px[0], y + item.offset_px[1]
        return x, self.height() - y

    def _update_overlay_actor(self, actor, old, item) -> bool:
        """Make `actor`, drawn for `old` (an item of the same kind and name), draw `item` if no
        other actor state than a new actor's is needed: a graphic's path, colour and width; a
        label's text and position (its font, colour, background and anchors unchanged)."""
        if isinstance(item, Label):
            if _label_style(old) != _label_style(item):
                return False
            if item.text != old.text:
                actor.SetInput(item.text)
            actor.SetPosition(*self._label_position(item))
            return True
        path = self._graphic_path(item)
        if path is None:
            return False
        pts, closed, dashed, width = path
        poly = actor.GetMapper().GetInput()
        xyz = self._segment_points(pts, closed, dashed)
        if poly is not None and len(xyz) and poly.GetNumberOfPoints() == len(xyz):
            # the same segments moved (a dragged edge): new coordinates in the kept data set, since
            # a new one per motion cost an allocation and a VTK garbage collection of the old one
            poly.GetPoints().SetData(numpy_support.numpy_to_vtk(xyz, deep=True))
            poly.Modified()
        else:
            actor.GetMapper().SetInputData(_polyline_data(xyz))
        actor.GetProperty().SetColor(*item.color)
        actor.GetProperty().SetLineWidth(width)
        return True

    def _make_overlay_actor(self, item):
        path = self._graphic_path(item)
        if path is not None:
            pts, closed, dashed, width = path
            return self._polyline_actor(pts, item.color, width, closed=closed, dashed=dashed)
        if isinstance(item, Label):
            actor = self._make_text(item.text, item.size_px, item.color, item.background)
            tp = actor.GetTextProperty()
            {"left": tp.SetJustificationToLeft, "center": tp.SetJustificationToCentered,
             "right": tp.SetJustificationToRight}[item.align]()
            valign = item.valign if isinstance(item, Text) else "center"
            {"center": tp.SetVerticalJustificationToCentered, "top": tp.SetVerticalJustificationToTop,
             "bottom": tp.SetVerticalJustificationToBottom}[valign]()
            actor.SetPosition(*self._label_position(item))
            return actor
        return None  # a hidden handle

    def _make_text(self, text: str, size: int, color, background: bool = False) -> vtkTextActor:
        actor = vtkTextActor()
        actor.SetInput(text)
        tp = actor.GetTextProperty()
        tp.SetFontFamily(4)  # VTK_FONT_FILE: the pinned file, not VTK's built-in Arial
        tp.SetFontFile(self._font_file)
        tp.SetFontSize(size)
        tp.SetColor(*color)
        if background:
            tp.SetBackgroundColor(0.0, 0.0, 0.0)
            tp.SetBackgroundOpacity(0.8)  # a line crossing a label must not cut through its text
        return actor

    # ---- rendering --------------------------------------------------------------------
    def refresh(self) -> None:
        """The scene changed: render it before the next frame is shown, once however many changes
        come first (under the runner by the settle's `render_pending`, else by a Qt paint event)."""
        self._needs_render = True
        if not frames_at_settle():
            self.update()

    def render_pending(self) -> bool:
        """Render if the scene changed since the last frame and the viewport is on screen (a
        hidden one keeps its change for when it is shown). True if a frame was rendered."""
        if not self._needs_render or not self.isVisible():
            return False
        self._needs_render = False
        size = (self.width(), self.height())
        # Mesa sizes the window's drawable lazily: the first frame after a resize (or the first ever) is
        # drawn at the drawable's old size, a corner over what the window showed before. Draw it again.
        # "After a resize", not "at a new size": a viewport resized while no frame was drawn and back
        # to the size of its last frame had a drawable of the size in between (issue 24: a 96 px strip
        # of viewport 2 over the 1x1 image the X server still held there).
        passes = 2 if self._resized_since_frame or self._rendered_size != size else 1
        self._rendered_size = size
        self._resized_since_frame = False
        for _ in range(passes):
            if passes == 2:
                self._image_layer.invalidate()  # a new drawable: both passes draw everything
            self._render_frame(self._Iren.Render)
        return True

    def render_now(self) -> None:
        """Render at once, whatever changed (for probes that drive a viewport without a shell)."""
        self._needs_render = False
        self._render_frame(self.GetRenderWindow().Render)

    def _render_frame(self, render: Callable[[], None]) -> None:
        self.frames_rendered += 1
        self._image_layer.prepare()
        try:
            render()
        finally:
            self._image_layer.finish()

    def _image_layer_key(self) -> tuple:
        """What layer 0 shows: VTK modification times of everything drawn there, and the size.
        Times only grow, so a changed scene never matches an older key."""
        image, text = self._image_actor, self._placeholder
        # (not the renderer's own time: a render that draws layer 0 modifies it)
        return (tuple(self.GetRenderWindow().GetSize()), tuple(self._renderer.GetBackground()),
                self._renderer.GetViewProps().GetMTime(), self._renderer.GetActiveCamera().GetMTime(),
                image.GetVisibility(), image.GetMTime(), image.GetProperty().GetMTime(),
                image.GetMapper().GetMTime(), self._image.GetMTime(),
                self._lut.GetMTime() if self._lut is not None else 0,
                text.GetVisibility(), text.GetMTime(), text.GetTextProperty().GetMTime())

    def paintEvent(self, ev: QtGui.QPaintEvent) -> None:  # noqa: N802 (Qt API)
        # Exposed, resized or shown: the window needs a frame. Under the runner the settle renders it.
        self._needs_render = True
        if not frames_at_settle():
            self.render_pending()

    def showEvent(self, ev: QtGui.QShowEvent) -> None:  # noqa: N802 (Qt API)
        # A page switch maps the window anew; render at the next settle even if X's expose event
        # for it arrives only after that settle.
        super().showEvent(ev)
        self._needs_render = True

    def sync_display(self) -> None:
        """Wait until the X server has the rendered frame (VTK draws on its own X connection)."""
        ident = self.GetRenderWindow().GetGenericDisplayId()
        if isinstance(ident, str) and ident.startswith("_"):
            _libx11.XSync(ctypes.c_void_p(int(ident[1:].split("_")[0], 16)), 0)

    # ---- mouse ------------------------------------------------------------------------
    def _emit(self, kind: str, ev: QtGui.QMouseEvent) -> None:
        if self.mouse_callback is not None:
            u, v = self.to_plane(ev.position().x(), ev.position().y())
            self.mouse_callback(kind, u, v, ev.button())

    def flush_pending_motion(self) -> None:
        """Deliver the latest coalesced motion (called by settle, before release, or by a timer)."""
        self._move_timer_armed = False
        if self._pending_move is not None and self.mouse_callback is not None:
            x, y, button = self._pending_move
            self._pending_move = None
            u, v = self.to_plane(x, y)
            self.mouse_callback("move", u, v, button)

    def mousePressEvent(self, ev: QtGui.QMouseEvent) -> None:  # noqa: N802
        if ev.button() == QtCore.Qt.MouseButton.RightButton:
            self._wl_drag = (ev.position().x(), ev.position().y(), self._window, self._level)
            return
        self._emit("press", ev)

    def mouseMoveEvent(self, ev: QtGui.QMouseEvent) -> None:  # noqa: N802
        if self._wl_drag is not None:
            x0, y0, w0, l0 = self._wl_drag
            w = max(1.0, w0 + 4.0 * (ev.position().x() - x0))
            lv = l0 - 2.0 * (ev.position().y() - y0)
            self.set_window_level(w, lv)
            if self.window_level_callback:
                self.window_level_callback(w, lv)
            return
        self._pending_move = (ev.position().x(), ev.position().y(), ev.button())
        if MOTION_DELIVERY["mode"] == "timer" and not self._move_timer_armed:
            self._move_timer_armed = True
            QtCore.QTimer.singleShot(0, self.flush_pending_motion)

    def mouseReleaseEvent(self, ev: QtGui.QMouseEvent) -> None:  # noqa: N802
        if ev.button() == QtCore.Qt.MouseButton.RightButton:
            self._wl_drag = None
            return
        self.flush_pending_motion()
        self._emit("release", ev)

    def mouseDoubleClickEvent(self, ev: QtGui.QMouseEvent) -> None:  # noqa: N802
        self._emit("double", ev)

    def wheelEvent(self, ev: QtGui.QWheelEvent) -> None:  # noqa: N802
        notches = -int(round(ev.angleDelta().y() / 120))  # +1 = wheel down
        if notches and self.wheel_callback:
            self.wheel_callback(notches)

    def keyPressEvent(self, ev) -> None:  # noqa: N802  (keys go to Qt widgets, not VTK)
        QtWidgets.QWidget.keyPressEvent(self, ev)

    def keyReleaseEvent(self, ev) -> None:  # noqa: N802
        QtWidgets.QWidget.keyReleaseEvent(self, ev)

    def enterEvent(self, ev) -> None:  # noqa: N802
        pass

    def leaveEvent(self, ev) -> None:  # noqa: N802
        pass


def _label_style(item: Label) -> tuple:
    """Everything of a label's actor but its text and position."""
    return (item.size_px, item.color, item.background, item.align, getattr(item, "valign", "center"))


def _fmt(value: float) -> str:
    """Colour bar numbers: no spurious decimals on large ranges, enough on small ones."""
    return f"{value:.0f}" if abs(value) >= 100 or float(value).is_integer() else f"{value:.3g}"


def _polyline_data(xyz: np.ndarray) -> vtkPolyData:
    """Line segments between consecutive point pairs of `xyz` (ImageViewport._segment_points)."""
    points, cells = vtkPoints(), vtkCellArray()
    if len(xyz):
        points.SetData(numpy_support.numpy_to_vtk(xyz, deep=True))
    for i in range(0, len(xyz), 2):
        cells.InsertNextCell(2)
        cells.InsertCellPoint(i)
        cells.InsertCellPoint(i + 1)
    poly = vtkPolyData()
    poly.SetPoints(points)
    poly.SetLines(cells)
    return poly


def _dash(x0: float, y0: float, x1: float, y1: float, on: float = 8.0, off: float = 5.0):
    length = float(np.hypot(x1 - x0, y1 - y0))
    if length < 1e-6:
        return []
    ux, uy = (x1 - x0) / length, (y1 - y0) / length
    out, s = [], 0.0
    while s < length:
        e = min(length, s + on)
        out.append((x0 + ux * s, y0 + uy * s, x0 + ux * e, y0 + uy * e))
        s = e + off
    return out
