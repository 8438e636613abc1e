"""Shared fixtures and the two-lane guard. Display tests start their own Xvfb; nothing here is mocked.

Lanes: `pytest -m "not display"` is the fast lane (pure modules and headless drivers, no Xvfb); `-m display`
is the display lane. A test that asks for the `display` fixture is marked `display` here, and any test not
marked `display` runs with an `Xvfb` on PATH that refuses to start and fails the test, so a test that
starts Xvfb (itself or through a subprocess) without the marker cannot slip into the fast lane.
"""
from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

GUARD_ENV = "MEDIMAGEOS_TEST_XVFB_GUARD"
# Random-action soak tests (marker `soak`): 250 actions each in `make test`, 1000 in `make sweep` (before a
# release), which sets this variable. A crash or hang that needs more actions than that is a release finding.
SOAK_ACTIONS = int(os.environ.get("MEDIMAGEOS_SOAK_ACTIONS", "250"))
_SHIM = """#!/bin/sh
# Installed by tests/conftest.py for tests without @pytest.mark.display.
case "$1" in -version|-help) exec "%s" "$@" ;; esac  # asking for the version starts no server
echo "$@" >> "${%s}"
echo "Xvfb refused: this test is not marked @pytest.mark.display (tests/conftest.py)" >&2
exit 1
"""


_CACHE_ENV = "MEDIMAGEOS_CACHE"
_cache_env_before: list[str | None] = []


@pytest.hookimpl(trylast=True)  # after pytest-qt's, which imports PySide6 into every test process
def pytest_configure(config) -> None:
    """MEDIMAGEOS_CACHE is set once, before any test runs, to the cache every test and every process it
    starts shares (tests/rendering/subject_cache.py: cache_base); restored when the session ends. No
    fixture sets it, so no test sees it change under it (tests that need another cache monkeypatch it)."""
    from tests.rendering.subject_cache import cache_base

    _cache_env_before.append(os.environ.get(_CACHE_ENV))
    os.environ[_CACHE_ENV] = str(cache_base())
    _skip_pyside_source_check_outside_the_project()


def _skip_pyside_source_check_outside_the_project() -> None:
    """pytest-qt imports PySide6 into every test process at configure time, and from then on PySide6 reads the
    whole source of every module imported (its `from __feature__` support looks for the word "PySide6" in it).
    A runner process never has PySide6 loaded (consoles are processes of their own), so there `import anthropic`
    (3,600 modules) costs 2 s; in a test process it read 3,600 source files, 14 s on a cold page cache and over
    120 s once beside other jobs (a fresh-clone run failed on it). No installed package uses PySide6's
    `__feature__` switches (an application's choice), so the check is kept for the project's own modules only."""
    feature = sys.modules.get("shibokensupport.feature") or sys.modules.get("PySide6.support.feature")
    check = getattr(feature, "_mod_uses_pyside", None)
    if check is None or getattr(check, "_project_only", False):
        return
    root = str(Path(__file__).resolve().parents[1]) + os.sep
    site = tuple(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))

    def project_modules_only(module) -> bool:
        path = getattr(module, "__file__", None) or ""
        if path.startswith(site) or not path.startswith(root):
            return False
        return check(module)

    project_modules_only._project_only = True  # type: ignore[attr-defined]
    feature._mod_uses_pyside = project_modules_only


def pytest_unconfigure(config) -> None:
    if _cache_env_before:
        before = _cache_env_before.pop()
        if before is None:
            os.environ.pop(_CACHE_ENV, None)
        else:
            os.environ[_CACHE_ENV] = before


def pytest_collection_modifyitems(config, items) -> None:
    """A test that uses the display fixture is a display test."""
    for item in items:
        if "display" in getattr(item, "fixturenames", ()) and item.get_closest_marker("display") is None:
            item.add_marker(pytest.mark.display)


@pytest.fixture(scope="session")
def _xvfb_shim_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("xvfb-guard")
    shim = d / "Xvfb"
    shim.write_text(_SHIM % (shutil.which("Xvfb") or "false", GUARD_ENV))
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return d


@pytest.fixture(autouse=True)
def _no_xvfb_without_display_marker(request, _xvfb_shim_dir, tmp_path_factory):
    """Outside the display lane, starting Xvfb fails the test with a message naming the missing marker."""
    if request.node.get_closest_marker("display") is not None:
        yield
        return
    log = tmp_path_factory.mktemp("xvfb-attempts") / "attempts"
    old_path, old_guard = os.environ.get("PATH", ""), os.environ.get(GUARD_ENV)
    os.environ["PATH"] = f"{_xvfb_shim_dir}{os.pathsep}{old_path}"
    os.environ[GUARD_ENV] = str(log)
    try:
        yield
    finally:
        os.environ["PATH"] = old_path
        if old_guard is None:
            os.environ.pop(GUARD_ENV, None)
        else:
            os.environ[GUARD_ENV] = old_guard
    if log.exists():
        pytest.fail(f"{request.node.nodeid} started Xvfb but is not marked @pytest.mark.display: mark it so the "
                    "fast lane (-m 'not display') stays display-free", pytrace=False)


@pytest.fixture(scope="session")
def display():
    """One real Xvfb server per test process: under pytest-xdist (`make test` runs 4 in the display lane) each
    worker's session has its own server, on a display number Xvfb picks itself (-displayfd), so the
    workers never share or race for one."""
    if shutil.which("Xvfb") is None:
        pytest.fail("Xvfb is not installed: run scripts/bootstrap.sh")
    from runner.display import VirtualDisplay

    d = VirtualDisplay(1280, 800).start()
    yield d
    d.stop()


@pytest.fixture(scope="session")
def console_keeper(display):
    """One ConsoleKeeper per worker on its display, as a runner worker holds one: consecutive episodes
    of one modality reset the console in place; any unclean or INVALID episode stops it."""
    from runner.console_process import ConsoleKeeper

    keeper = ConsoleKeeper()
    yield keeper
    keeper.close()


@pytest.fixture(scope="session")
def subject_cache() -> Path:
    """The persistent subject cache with all 31 subjects built (once per machine and generator version)."""
    from tests.rendering.subject_cache import session_cache

    return session_cache()


def descendants_alive(pids: list[int]) -> list[int]:
    """Which of these pids still exist (zombies excluded)."""
    alive = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split()[2] != "Z":
                    alive.append(pid)
        except FileNotFoundError:
            pass
    return alive


def require_console() -> None:
    """Xvfb and the development subject must be available: a missing install step fails the test."""
    if shutil.which("Xvfb") is None:
        pytest.fail("Xvfb is not installed: run scripts/bootstrap.sh")
    from rendering.subjects import load_runtime

    load_runtime("dev")
