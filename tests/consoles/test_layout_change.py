"""No stale pixels after a layout change (issue 24), on a real X display: the MR console goes through
every layout change in every order (1x1, 1x2, 2x2), the viewport resizes they make, series loads and
planning-grip drags, and every frame's viewer area must equal (a) the same frame with every shown
viewport drawn in full (its image layer cache bypassed) and (b) a console built afresh around the
same state. The issue's own sequence (cohort s06, L4_4ch, seed 0: the 2ch series into 1x1, its grips
dragged, 2x2) showed a 96 px strip of viewport 2 over the 1x1 image before the fix."""
from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.consoles.layout_change_probe import REPLY, START_LAYOUT, TOURS, layout_changes
from tests.consoles.probe_process import ROOT

# a "fresh" part builds an MR console at every step it compares (~3 s alone, ~4x that under 4 display workers);
# the first part of a worker also pays the probe's start (imports, subject) and the script's sequence
pytestmark = [pytest.mark.display, pytest.mark.timeout(180)]
ALL_CHANGES = {(a, b) for a in ("1x1", "1x2", "2x2") for b in ("1x1", "1x2", "2x2") if a != b}


_CACHE: dict[tuple[str, str], list[dict]] = {}
# a full redraw of the same frame; a console built afresh around the same state, for the first and the second
# half of the steps (each fresh console costs a build: one test for all of them took 43 s under 4 workers)
PARTS = ("redraw", "fresh-0", "fresh-1")
JOB_LIMIT_S = 150.0  # one part's wait, under the test's limit: a stuck probe fails here, with its stderr


class _Probe:
    """One layout_change_probe process (--serve) for the tests of this module in this worker: its imports, the
    subject and each script's sequence are paid once, not once per part (9 processes, 44 s alone before)."""

    def __init__(self, display, log: Path) -> None:
        self.log, self._buf = log, b""
        with open(log, "w") as err:  # stderr to a file: a pipe nobody reads could fill and stall the probe
            self.proc = subprocess.Popen([sys.executable, "-m", "tests.consoles.layout_change_probe", "--serve"],
                                         cwd=ROOT, env=dict(os.environ, DISPLAY=display.name), bufsize=0,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)

    def run(self, out: Path, script: str, part: str | None, half: int | None) -> Path:
        """Run one job; `out` once the probe answered that it finished. A probe that does not answer in time is
        killed (a later job must not read this one's late answer)."""
        assert self.proc.poll() is None, f"the probe exited: {self.log.read_text()[-2000:]}"
        job = {"out": str(out), "script": script, "part": part, "half": half}
        self.proc.stdin.write((json.dumps(job) + "\n").encode())
        deadline = time.monotonic() + JOB_LIMIT_S
        while True:
            line, sep, rest = self._buf.partition(b"\n")
            if sep:  # a whole line (the probe's stdout may carry others than its answers)
                self._buf = rest
                if line.startswith(REPLY.encode()):
                    reply = json.loads(line[len(REPLY):])
                    assert "error" not in reply, reply["error"]
                    return out
                continue
            ready, _, _ = select.select([self.proc.stdout], [], [], max(deadline - time.monotonic(), 0.0))
            if not ready:
                self.close()
                raise AssertionError(f"the probe did not answer within {JOB_LIMIT_S:.0f} s; killed: "
                                     f"{self.log.read_text()[-2000:]}")
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            assert chunk, f"the probe exited: {self.log.read_text()[-2000:]}"
            self._buf += chunk

    def close(self) -> None:
        try:
            self.proc.stdin.close()  # the probe's end of jobs
            self.proc.wait(timeout=15)
        except (OSError, subprocess.TimeoutExpired):
            pass
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="module")
def probe(display, tmp_path_factory):
    p = _Probe(display, tmp_path_factory.mktemp("probe") / "stderr.txt")
    yield p
    p.close()


def _steps(probe: _Probe, tmp_path_factory, script: str, part: str) -> list[dict]:
    """The probe's steps of `script` for one comparison, run once per worker process (several tests read one)."""
    if (script, part) not in _CACHE:
        half = None if part == "redraw" else int(part[-1])
        out = probe.run(tmp_path_factory.mktemp(f"{script}_{part}"), script, part.split("-")[0], half)
        _CACHE[script, part] = json.loads((out / "steps.json").read_text())
    return _CACHE[script, part]


def _stale(steps: list[dict], part: str) -> list[str]:
    """Steps whose frame differs from the part's comparison frames; a fresh half must have compared some."""
    against = ("checked", "full_redraw") if part == "redraw" else ("fresh",)
    compared = [s for s in steps if all(k in s for k in against)]
    assert compared, f"the {part} probe compared no step"
    return [s["name"] for s in compared if any(s[k] != s["sequence"] for k in against)]


@pytest.mark.parametrize("part", PARTS)
def test_the_issue_sequence_shows_no_stale_pixels(probe, tmp_path_factory, part):
    steps = _steps(probe, tmp_path_factory, "issue24", part)
    assert [s["layout"] for s in steps][-1] == "2x2"
    assert _stale(steps, part) == [], f"frames differing from the {part} frame (PNGs in the probe's out)"


@pytest.mark.parametrize("part", PARTS)
@pytest.mark.parametrize("tour", sorted(TOURS))
def test_every_layout_change_of_a_tour_shows_what_is_there(probe, tmp_path_factory, tour, part):
    steps = _steps(probe, tmp_path_factory, tour, part)
    layouts = [START_LAYOUT] + [s["layout"] for s in steps]
    assert {(a, b) for a, b in zip(layouts, layouts[1:]) if a != b} == layout_changes(TOURS[tour])
    assert _stale(steps, part) == [], f"frames differing from the {part} frame"


@pytest.mark.parametrize("script", ["issue24", *sorted(TOURS)])
def test_every_step_changes_the_viewer(probe, tmp_path_factory, script):
    # otherwise equal frames would prove nothing
    steps = _steps(probe, tmp_path_factory, script, "redraw")
    assert [s["name"] for s in steps if s["sequence"] == s["previous"]] == []


def test_the_tours_together_make_every_layout_change_in_every_order():
    assert set().union(*(layout_changes(t) for t in TOURS.values())) == ALL_CHANGES
