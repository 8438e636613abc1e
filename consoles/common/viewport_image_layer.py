"""The image layer of a viewport, kept between frames so a frame that only moves overlays does not
shade the image again.

A viewport draws in two renderer layers of one VTK render window: layer 0 holds the image (and the
"no image" placeholder), layer 1 the overlays drawn over it. Under llvmpipe the image quad is the
most expensive part of a frame (about 17 ns a pixel of CPU: some 4 ms for a CT scout), while a drag
on a scout or a localizer changes only overlays. So when a frame draws the layer-0 scene the frame
before drew too, its pixels are copied into a framebuffer of our own (not at every frame: the copy
costs about 1 ms, and a live image never shows one scene twice); a later frame whose layer-0 scene
is still that one (same `key`) skips layer 0 and copies those pixels back before layer 1 draws.
The copy is exact (same size, same RGBA8 format, nearest), so the frame is the one layer 0 would
have drawn: nothing depends on layer 0's depth, since everything in layer 1 is 2D.
"""
from __future__ import annotations

from typing import Callable, Hashable

from vtkmodules.vtkCommonCore import VTK_UNSIGNED_CHAR, vtkCommand
from vtkmodules.vtkRenderingCore import vtkRenderer, vtkRenderWindow
from vtkmodules.vtkRenderingOpenGL2 import vtkOpenGLFramebufferObject

GL_READ_FRAMEBUFFER = 0x8CA8
GL_DRAW_FRAMEBUFFER = 0x8CA9
GL_DRAW_FRAMEBUFFER_BINDING = 0x8CA6
GL_READ_FRAMEBUFFER_BINDING = 0x8CAA
GL_COLOR_BUFFER_BIT = 0x4000
GL_NEAREST = 0x2600


class ImageLayerCache:
    """Skips layer 0 (`base`) of `window` while its scene is unchanged and puts back the pixels it
    drew last. `key()` says what layer 0 shows; `prepare()` before every render decides, `finish()`
    after it."""

    def __init__(self, window: vtkRenderWindow, base: vtkRenderer, top: vtkRenderer,
                 key: Callable[[], Hashable]) -> None:
        self._window, self._base, self._scene = window, base, key
        self._fbo: vtkOpenGLFramebufferObject | None = None
        self._fbo_size: tuple[int, int] | None = None
        self._key: Hashable | None = None  # the scene whose pixels the framebuffer holds
        self._stored = False
        self._prepared = False  # a render under way was announced by `prepare`
        self._store_next = False  # the frame under way draws a scene the frame before drew too
        self.reused = 0  # frames that put the layer back instead of drawing it (for tests and probes)
        base.AddObserver(vtkCommand.EndEvent, self._store)
        top.AddObserver(vtkCommand.StartEvent, self._restore)

    def prepare(self) -> None:
        """Before a render: reuse the stored layer if it shows the scene on show, else draw it. A
        scene drawn by two frames in a row is stored by the second: a live image (a new scene every
        frame) is never copied."""
        key = self._scene()
        reuse = self._stored and key == self._key and self._fbo_size == self._size()
        self._base.SetDraw(not reuse)
        self._prepared = True
        if not reuse:
            self._store_next = key == self._key
            self._key, self._stored = key, False

    def finish(self) -> None:
        """After the render. A frame that drew layer 0 is keyed as the render left the scene
        (drawing may touch what the key reads: a lookup table is built, a text laid out). A render
        nobody prepared (VTK's or Qt's own) draws layer 0 again."""
        if self._prepared and self._base.GetDraw():
            self._key = self._scene()
        self._prepared = False
        self._base.DrawOn()

    def invalidate(self) -> None:
        """Draw layer 0 at the next two renders whatever the key."""
        self._stored = False
        self._key = None

    # ---- inside a render (the window's context is current) ------------------------------
    def _size(self) -> tuple[int, int]:
        w, h = self._window.GetSize()
        return int(w), int(h)

    def _state(self):
        return self._window.GetState()

    def _binding(self, which: int) -> int:
        v = [0]
        self._state().vtkglGetIntegerv(which, v)
        return int(v[0])

    def _copy(self, src: int, dst: int) -> None:
        """Copy the colour of framebuffer `src` to `dst` (both the window's size), then bind back
        whatever was bound."""
        st = self._state()
        draw, read = self._binding(GL_DRAW_FRAMEBUFFER_BINDING), self._binding(GL_READ_FRAMEBUFFER_BINDING)
        w, h = self._size()
        st.vtkglBindFramebuffer(GL_READ_FRAMEBUFFER, src)
        st.vtkglBindFramebuffer(GL_DRAW_FRAMEBUFFER, dst)
        st.vtkglBlitFramebuffer(0, 0, w, h, 0, 0, w, h, GL_COLOR_BUFFER_BIT, GL_NEAREST)
        st.vtkglBindFramebuffer(GL_READ_FRAMEBUFFER, read)
        st.vtkglBindFramebuffer(GL_DRAW_FRAMEBUFFER, draw)

    def _framebuffer(self) -> vtkOpenGLFramebufferObject:
        size = self._size()
        if self._fbo is None or self._fbo_size != size:
            if self._fbo is not None:
                self._fbo.ReleaseGraphicsResources(self._window)
            fbo = vtkOpenGLFramebufferObject()
            fbo.SetContext(self._window)
            st = self._state()
            st.PushFramebufferBindings()
            fbo.Bind()
            # one RGBA8 colour texture, as the window's own render framebuffer: a same-format copy
            if not fbo.PopulateFramebuffer(size[0], size[1], True, 1, VTK_UNSIGNED_CHAR, False, 0, 0, False):
                st.PopFramebufferBindings()
                raise RuntimeError(f"could not make a {size[0]}x{size[1]} framebuffer for the image layer")
            st.PopFramebufferBindings()
            self._fbo, self._fbo_size = fbo, size
        return self._fbo

    def _store(self, _obj, _event) -> None:
        if not self._base.GetDraw():
            return
        if not (self._prepared and self._store_next):  # an unannounced frame, or a scene seen once
            self._stored = False
            return
        self._copy(self._binding(GL_DRAW_FRAMEBUFFER_BINDING), self._framebuffer().GetFBOIndex())
        self._stored = True

    def _restore(self, _obj, _event) -> None:
        if self._base.GetDraw():
            return
        self._copy(self._framebuffer().GetFBOIndex(), self._binding(GL_DRAW_FRAMEBUFFER_BINDING))
        self.reused += 1
