"""The built image (`make image`): non-root, small, its packages equal to the lock, and `medimageos doctor`
inside it reproduces the golden observations bit for bit. Needs a container engine and the image."""
from __future__ import annotations

import pytest

from tests.containers.conftest import run_in

VENV = "/app/.venv/bin"


def test_runs_as_a_non_root_user(engine, image):
    r = run_in(engine, image, "-u", entrypoint="id")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() != "0", "the image runs as root; docker/Dockerfile must end with a non-root USER"


def test_entrypoint_is_medimageos_run(engine, image):
    r = run_in(engine, image)  # CMD is --help
    assert r.returncode == 0, r.stderr
    assert "usage: medimageos run" in r.stdout


def test_no_pip_cache_no_apt_lists(engine, image):
    # What `make image` must not leave in a layer: apt's package lists and pip's download cache.
    script = ("ls -A /var/lib/apt/lists | grep -v -x -e lock -e partial || true; "
              "ls -d /root/.cache/pip /home/*/.cache/pip /tmp/.cache/pip 2>/dev/null || true")
    r = run_in(engine, image, "-c", script, entrypoint="/bin/sh")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "", f"left in the image:\n{r.stdout}"


def test_python_packages_equal_the_lock(engine, image):
    code = ("from runner.lockfile import installed_mismatches, read_lock, unlocked_installed; "
            "lock = read_lock('/app/requirements.lock'); "
            "print(installed_mismatches(lock), unlocked_installed(lock))")
    r = run_in(engine, image, "-c", code, entrypoint=f"{VENV}/python")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[] []", f"the image's .venv differs from requirements.lock: {r.stdout}"


@pytest.mark.timeout(400)
def test_doctor_reproduces_the_golden_observations(engine, image):
    r = run_in(engine, image, "doctor", entrypoint=f"{VENV}/medimageos", timeout=380)
    assert r.returncode == 0 and "reproduces the official observations bit for bit" in r.stdout, \
        f"doctor in the image (exit {r.returncode}):\n{r.stdout}\n{r.stderr[-2000:]}"
