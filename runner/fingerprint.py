"""The environment fingerprint: the versions observations depend on, to tell comparable result sets apart.

Two halves make one flat dict (fonts nested as {path: sha256}):

- console side (consoles/common/environment.py, inside the console process): python, qt, pyside6,
  vtk, numpy, gl_vendor, gl_renderer, gl_version, fonts;
- runner side (`runner_fingerprint` here): xvfb (the X server that drew the screen), imagecodecs and
  zlib_ng and png_level (the PNG encoder of runner/capture.py: the package, the zlib-ng it bundles and its
  deflate level), mss (the capture).

Episodes carry it in state.json under provenance.environment. Nothing here imports Qt or VTK.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import re
import shutil
import subprocess
from typing import Any

# The pure comparison half lives in scoring (scores.json summarizes it); re-exported for the runner's users.
from scoring.fingerprints import (CAPTURE_FIELDS, ENCODER_FIELDS, RENDER_FIELDS, canonical,  # noqa: F401
                                  component, differing_fields, flatten, summarize)

_XVFB_VERSION: str | None = None  # per process: every display of a process comes from one binary


def _decode_xorg_release(release: int) -> str:
    """X.Org's VENDOR_RELEASE (12101007) -> '1.21.1.7'."""
    major, minor = release // 10_000_000, (release // 100_000) % 100
    patch, snap = (release // 1000) % 100, release % 1000
    return f"{major}.{minor}.{patch}" + (f".{snap}" if snap else "")


def _xserver_version(display_name: str) -> str | None:
    """Vendor and release the running X server reports on connection (libX11: one round trip)."""
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("X11") or "libX11.so.6")
        lib.XOpenDisplay.restype, lib.XOpenDisplay.argtypes = ctypes.c_void_p, [ctypes.c_char_p]
        lib.XServerVendor.restype, lib.XServerVendor.argtypes = ctypes.c_char_p, [ctypes.c_void_p]
        lib.XVendorRelease.restype, lib.XVendorRelease.argtypes = ctypes.c_int, [ctypes.c_void_p]
        lib.XCloseDisplay.argtypes = [ctypes.c_void_p]
    except (OSError, AttributeError):
        return None
    dpy = lib.XOpenDisplay(display_name.encode())
    if not dpy:
        return None
    try:
        vendor = (lib.XServerVendor(dpy) or b"").decode(errors="replace")
        release = int(lib.XVendorRelease(dpy))
    finally:
        lib.XCloseDisplay(dpy)
    if "X.Org" in vendor:
        return f"X.Org X Server {_decode_xorg_release(release)}"
    return f"{vendor} {release}"


def _xvfb_cli_version() -> str | None:
    """`Xvfb -version` where it is supported (prints to stderr; Debian 12's Xvfb rejects it)."""
    exe = shutil.which("Xvfb")
    if exe is None:
        return None
    try:
        r = subprocess.run([exe, "-version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"X\.Org X Server (\S+)", r.stderr + r.stdout)
    return f"X.Org X Server {m.group(1)}" if m else None


def xvfb_version(display_name: str | None = None) -> str:
    """The Xvfb version ('X.Org X Server 1.21.1.7'), asked once per process.

    From the running server when a display is given (what actually drew the pixels), else from
    `Xvfb -version`. 'unknown' (not cached) when neither works.
    """
    global _XVFB_VERSION
    if _XVFB_VERSION is None:
        found = (_xserver_version(display_name) if display_name else None) or _xvfb_cli_version()
        if found is None:
            return "unknown"
        _XVFB_VERSION = found
    return _XVFB_VERSION


def runner_fingerprint(display_name: str | None = None) -> dict[str, Any]:
    """The runner side of the fingerprint: X server, PNG encoder (imagecodecs, zlib-ng, level), capture (mss)."""
    import mss

    from runner.capture import encoder_versions

    return {
        "xvfb": xvfb_version(display_name),
        **encoder_versions(),
        "mss": getattr(mss, "__version__", "unknown"),
    }
