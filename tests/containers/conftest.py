"""The container lane (`make test-containers`; marker `containers`, not part of `make test`'s two lanes).

Every test in tests/containers is marked `containers` here. Tests that need a container engine get it from
the `engine` fixture: MEDIMAGEOS_CONTAINER_ENGINE (the Makefile sets it, e.g. "podman --runtime runc
--cgroup-manager cgroupfs"), else a running docker, else podman; without one they skip and say so. Tests
that need the image get it from `image` (MEDIMAGEOS_IMAGE, default medimageosworld), which skips when it
has not been built and names `make image`. Engine tests also skip unless the lane is selected with
`-m containers`: a plain `pytest tests` or `make test` must not spend minutes starting containers. The pure
tests here (no engine) run wherever they are collected.
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_configure(config) -> None:
    # Registered here rather than in pyproject.toml: the lane belongs to this folder.
    config.addinivalue_line(
        "markers", "containers: builds on or runs the container image (`make test-containers`; not in `make test`)")


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents and item.get_closest_marker("containers") is None:
            item.add_marker(pytest.mark.containers)


def find_engine() -> list[str] | None:
    """The engine command line, or None. podman gets runc and cgroupfs (see scripts/make-offline-base.sh)."""
    configured = os.environ.get("MEDIMAGEOS_CONTAINER_ENGINE", "").strip()
    if configured:
        cmd = shlex.split(configured)
        if not shutil.which(cmd[0]):
            pytest.skip(f"MEDIMAGEOS_CONTAINER_ENGINE={configured!r}, but {cmd[0]!r} is not on PATH")
        return cmd
    if shutil.which("docker"):
        try:
            if subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0:
                return ["docker"]
        except subprocess.TimeoutExpired:
            pass
    if shutil.which("podman"):
        return ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs"]
    return None


def lane_selected(config) -> bool:
    """Was the container lane asked for (`-m containers`, as `make test-containers` does)? A run of the
    whole suite without a marker expression, or `make test`'s lanes, must not start containers: they take
    minutes and measure the image, not the code under test."""
    expr = (config.getoption("markexpr", default="") or "").replace(" ", "")
    return "containers" in expr and "notcontainers" not in expr


@pytest.fixture(scope="session")
def engine(request) -> list[str]:
    if not lane_selected(request.config):
        pytest.skip("container lane: runs only when selected with -m containers (`make test-containers`)")
    cmd = find_engine()
    if cmd is None:
        pytest.skip("no container engine: neither a running docker nor podman was found "
                    "(MEDIMAGEOS_CONTAINER_ENGINE names one explicitly); the container lane needs one")
    return cmd


@pytest.fixture(scope="session")
def image(engine) -> str:
    name = os.environ.get("MEDIMAGEOS_IMAGE", "medimageosworld")
    if subprocess.run([*engine, "image", "inspect", name], capture_output=True).returncode != 0:
        pytest.skip(f"image {name!r} is not built: run `make image` first (MEDIMAGEOS_IMAGE names another)")
    return name


def run_in(engine: list[str], image: str, *args: str, entrypoint: str | None = None,
           timeout: float = 100) -> subprocess.CompletedProcess:
    """`ENGINE run --rm --network host IMAGE args` (host networking: see scripts/make-offline-base.sh)."""
    cmd = [*engine, "run", "--rm", "--network", "host", "--shm-size", "1g"]
    if entrypoint is not None:
        cmd += ["--entrypoint", entrypoint]
    return subprocess.run([*cmd, image, *args], capture_output=True, text=True, timeout=timeout)
