"""The Ray cluster of containers (docker/cluster_test.py): head + two worker containers, no shared
filesystem; a plain run, a driver killed and restarted, a worker container killed mid-run; every episode
on the driver's disk exactly once, verdicts and screenshots equal to a local run. About 2.5 min."""
from __future__ import annotations

import importlib.util
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.display  # the local comparison run starts Xvfb on this machine
@pytest.mark.timeout(1200)
def test_cluster_of_containers_survives_a_killed_worker_and_a_driver_restart(engine, image, tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("cluster_test", ROOT / "docker" / "cluster_test.py")
    cluster_test = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cluster_test)
    code = cluster_test.main(["--engine", shlex.join(engine), "--image", image, "--work", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out[-4000:]
    assert "cluster-test: PASSED" in out
