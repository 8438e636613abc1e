"""A Ray cluster of containers on one host, no shared filesystem: the image's episodes over two worker
containers, with `--out` only on the driver's disk, a worker container killed mid-run and a driver restart.

    .venv/bin/python docker/cluster_test.py --engine "podman --runtime runc --cgroup-manager cgroupfs"

Containers (host networking, each its own filesystem and subject cache):
    mio-head   Ray head (no CPUs for actors) and the driver; the only container with a mount: the results
               folder on the host (`--out /app/results`), i.e. the driver's disk.
    mio-w1/w2  Ray workers, 2 CPUs each, no mounts. Episodes run there in scratch folders and are shipped
               back to the driver (runner/ray_backend.py), which writes them atomically.

All three share the host's network namespace, so each Ray node gets its own ports (a Ray node's default
ports are fixed numbers and would collide). The driver runs in the head container: a Ray driver talks to
its node's raylet through a socket in that node's filesystem, and Ray requires the driver's Python patch
version to equal the cluster's (the image's Debian 3.11.2, not the host's).

Runs, on the same 30 episodes (2 cards x 3 modalities x seeds 0-4, subject dev, the reference solver):
  local    this machine's .venv, local backend, 2 workers: the verdicts and screenshots to equal, and the
           throughput baseline
  cluster  the cluster, 2 actors (one per worker container): throughput and the per-episode transfer size
  restart  the driver killed (SIGKILL) after a few episodes and started again: it resumes
  kill     worker container mio-w1 killed (`ENGINE kill`) mid-run: its episodes are retried on mio-w2
Each cluster run must end with every episode's folder on the host exactly once (no temporaries, the
driver's count of shipped folders = episodes run), verdicts (but wall time) and screenshots equal to the
local run's, and no episode folder left on the surviving worker. Exit code 0 only if all of that holds.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CARDS = ("ct_ui_smoke_routine", "ct_kub_low_dose_constraint", "mr_select_sequence_v1",
         "mr_select_transverse_viewport_v1", "us_kidney_preset_acquire_save_v1", "us_kidney_set_display_v1")
SEEDS = range(5)
SUBJECT = "dev"
AGENT = "reference"
GCS_PORT = 6390
# Per node: a block of fixed ports and a worker-port range of its own (the nodes share one network namespace).
NODES = {"mio-head": (6390, 20000), "mio-w1": (6410, 22000), "mio-w2": (6430, 24000)}
VENV = "/app/.venv/bin"
RUN_ARGS = ["--agent", AGENT, "--tasks", ",".join(CARDS), "--subjects", SUBJECT,
            "--seeds", f"{SEEDS.start}-{SEEDS.stop - 1}"]
N_EPISODES = len(CARDS) * len(SEEDS)


class Cluster:
    def __init__(self, engine: list[str], image: str, results: Path) -> None:
        self.engine, self.image, self.results = engine, image, results
        # Ray 2.60 authenticates cluster members with a token; one per cluster, in the environment only.
        self.token = secrets.token_hex(32)

    def sh(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
        r = subprocess.run([*self.engine, *args], capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:3])}... failed ({r.returncode}): {r.stderr.strip()[-1500:]}")
        return r

    def start_node(self, name: str) -> None:
        base, wport = NODES[name]
        head = name == "mio-head"
        ports = ["--node-manager-port", str(base + 1), "--object-manager-port", str(base + 2),
                 "--dashboard-agent-listen-port", str(base + 3), "--dashboard-agent-grpc-port", str(base + 4),
                 "--runtime-env-agent-port", str(base + 5), "--metrics-export-port", str(base + 6),
                 "--min-worker-port", str(wport), "--max-worker-port", str(wport + 999)]
        role = (["--head", "--port", str(GCS_PORT), "--ray-client-server-port", str(base + 7),
                 "--include-dashboard", "false", "--num-cpus", "0"] if head else
                ["--address", f"127.0.0.1:{GCS_PORT}", "--num-cpus", "2"])
        mount = ["-v", f"{self.results}:/app/results"] if head else []
        self.sh("rm", "-f", name, check=False)
        self.sh("run", "-d", "--name", name, "--network", "host", "--shm-size", "1g", *mount,
                "-e", "RAY_AUTH_MODE=token", "-e", f"RAY_AUTH_TOKEN={self.token}",
                "--entrypoint", f"{VENV}/ray", self.image,
                "start", "--block", "--node-ip-address", "127.0.0.1", "--object-store-memory", "300000000",
                "--disable-usage-stats", *role, *ports)

    def up(self) -> None:
        self.start_node("mio-head")
        self.wait_nodes(1)
        for w in ("mio-w1", "mio-w2"):
            self.start_node(w)
        self.wait_nodes(3)

    def alive_nodes(self) -> int:
        code = ("import ray; ray.init(address='127.0.0.1:%d', logging_level='ERROR'); "
                "print(sum(n['Alive'] for n in ray.nodes()))" % GCS_PORT)
        r = self.exec("mio-head", f"{VENV}/python", "-c", code, check=False, timeout=60)
        try:
            return int(r.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return 0

    def wait_nodes(self, n: int, timeout: float = 120) -> None:
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if self.alive_nodes() >= n:
                return
            time.sleep(2)
        logs = self.sh("logs", "--tail", "30", "mio-head", check=False)
        raise RuntimeError(f"the cluster did not reach {n} nodes in {timeout:.0f} s:\n{logs.stdout}{logs.stderr}")

    def exec(self, container: str, *cmd: str, check: bool = True, timeout: float = 120):
        return self.sh("exec", "-e", "RAY_AUTH_MODE=token", "-e", f"RAY_AUTH_TOKEN={self.token}",
                       container, *cmd, check=check, timeout=timeout)

    def driver(self, sub: str, log: Path, workers: int = 2) -> subprocess.Popen:
        """The run, started in the head container; its pid inside is kept in /tmp/driver.pid. Its output
        goes to `log` (a pipe nobody reads while the run goes on would fill up and stop the driver)."""
        cmd = (f"echo $$ > /tmp/driver.pid; exec {VENV}/medimageos run {' '.join(RUN_ARGS)} --backend ray "
               f"--ray-address 127.0.0.1:{GCS_PORT} --workers {workers} --max-invalid-retries 0 "
               f"--out /app/results/{sub}")
        return subprocess.Popen([*self.engine, "exec", "-e", "RAY_AUTH_MODE=token", "-e",
                                 f"RAY_AUTH_TOKEN={self.token}", "mio-head", "sh", "-c", cmd],
                                stdout=open(log, "a"), stderr=subprocess.STDOUT, text=True)

    def down(self) -> None:
        for name in NODES:
            self.sh("rm", "-f", "-t", "2", name, check=False)


def finished(out: Path) -> int:
    return sum(1 for _ in out.glob(f"{AGENT}/*/*/seed*/verdict.json"))


def wait_finished(out: Path, n: int, proc: subprocess.Popen, timeout: float = 600) -> None:
    t0 = time.monotonic()
    while finished(out) < n:
        if proc.poll() is not None:
            raise RuntimeError(f"the driver ended (exit {proc.returncode}) before {n} episodes were done")
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(f"fewer than {n} episodes done after {timeout:.0f} s")
        time.sleep(0.5)


def episode_digest(ep: Path) -> dict[str, Any]:
    verdict = json.loads((ep / "verdict.json").read_text())
    verdict.pop("wall_seconds", None)
    shots = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(ep.glob("*.png"))}
    return {"verdict": verdict, "screenshots": shots}


def check_tree(out: Path, local: Path) -> list[str]:
    """Every episode once, no temporaries, verdicts and screenshots equal to the local run's."""
    problems = []
    leftovers = [str(p.relative_to(out)) for p in out.rglob("*") if ".tmp-" in p.name or p.name.endswith(".part")]
    if leftovers:
        problems.append(f"temporaries left in {out.name}: {leftovers[:5]}")
    folders = sorted(p.parent for p in out.glob(f"{AGENT}/*/*/seed*/verdict.json"))
    if len(folders) != N_EPISODES:
        problems.append(f"{len(folders)} episode folders in {out.name}, expected {N_EPISODES}")
    for ep in folders:
        rel = ep.relative_to(out)
        if not (local / rel / "verdict.json").is_file():
            problems.append(f"{rel}: not in the local run")
            continue
        a, b = episode_digest(local / rel), episode_digest(ep)
        if a["verdict"] != b["verdict"]:
            diff = {k: (a["verdict"].get(k), b["verdict"].get(k)) for k in set(a["verdict"]) | set(b["verdict"])
                    if a["verdict"].get(k) != b["verdict"].get(k)}
            problems.append(f"{rel}: verdict differs from the local run: {diff}")
        if a["screenshots"] != b["screenshots"]:
            bad = [n for n in a["screenshots"] if a["screenshots"][n] != b["screenshots"].get(n)]
            problems.append(f"{rel}: {len(bad)} screenshots differ from the local run (first {bad[:1]})")
    return problems


def shipped(log: str) -> tuple[int, float]:
    m = re.search(r"ray: (\d+) episode folders shipped to \S+, ([\d.]+) MB each", log)
    return (int(m.group(1)), float(m.group(2))) if m else (0, 0.0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", default="podman --runtime runc --cgroup-manager cgroupfs")
    ap.add_argument("--image", default="medimageosworld")
    ap.add_argument("--work", type=Path, default=None, help="keep the runs here (default: a temporary folder)")
    ap.add_argument("--skip", default="", help="comma-separated runs to skip: cluster,restart,kill")
    args = ap.parse_args(argv)
    engine = shlex.split(args.engine)
    skip = set(filter(None, args.skip.split(",")))
    work = args.work or Path(tempfile.mkdtemp(prefix="medimageos-cluster-"))
    work.mkdir(parents=True, exist_ok=True)
    results = work / "driver"  # the driver's disk; mounted only into mio-head
    results.mkdir(exist_ok=True)
    results.chmod(0o777)  # the image runs as uid 1000
    problems: list[str] = []
    figures: dict[str, Any] = {"episodes": N_EPISODES}

    t0 = time.monotonic()
    local = work / "local"
    r = subprocess.run([str(ROOT / ".venv/bin/medimageos"), "run", *RUN_ARGS, "--workers", "2",
                        "--max-invalid-retries", "0", "--out", str(local)], capture_output=True, text=True,
                       cwd=ROOT, timeout=1800)
    figures["local_s"] = round(time.monotonic() - t0, 1)
    print(f"[local, 2 workers: {figures['local_s']} s, exit {r.returncode}] {r.stdout.strip()}", flush=True)
    if r.returncode != 0 or finished(local) != N_EPISODES:
        print(r.stderr[-3000:], file=sys.stderr)
        return 1

    cluster = Cluster(engine, args.image, results)
    try:
        t0 = time.monotonic()
        cluster.up()
        print(f"[cluster up: head + 2 workers in {time.monotonic() - t0:.0f} s]", flush=True)

        if "cluster" not in skip:
            t0 = time.monotonic()
            p = cluster.driver("cluster", work / "cluster.log")
            p.wait(timeout=1800)
            log = (work / "cluster.log").read_text()
            figures["cluster_s"] = round(time.monotonic() - t0, 1)
            n, mb = shipped(log)
            figures["shipped_mb_per_episode"] = mb
            print(f"[cluster, 2 actors: {figures['cluster_s']} s, exit {p.returncode}, {n} folders shipped, "
                  f"{mb} MB each]", flush=True)
            if p.returncode != 0:
                problems.append(f"cluster run exit {p.returncode}: {log[-2000:]}")
            if n != N_EPISODES:
                problems.append(f"cluster run shipped {n} folders for {N_EPISODES} episodes")
            problems += [f"cluster: {x}" for x in check_tree(results / "cluster", local)]

        if "restart" not in skip:
            p = cluster.driver("restart", work / "restart-1.log")
            wait_finished(results / "restart", 6, p)
            cluster.exec("mio-head", "sh", "-c", "kill -9 $(cat /tmp/driver.pid)")
            p.wait(timeout=60)
            before = finished(results / "restart")
            print(f"[restart: driver killed with {before} episodes on disk]", flush=True)
            cluster.wait_nodes(3)
            p = cluster.driver("restart", work / "restart-2.log")
            p.wait(timeout=1800)
            log = (work / "restart-2.log").read_text()
            n, _ = shipped(log)
            print(f"[restart: second driver exit {p.returncode}, {n} folders shipped]", flush=True)
            if p.returncode != 0:
                problems.append(f"restart run exit {p.returncode}: {log[-2000:]}")
            # the killed driver may have delivered more after the count above, never fewer
            if n + before < N_EPISODES or n > N_EPISODES - before:
                problems.append(f"restart: {before} episodes before the restart + {n} shipped after "
                                f"!= {N_EPISODES}")
            problems += [f"restart: {x}" for x in check_tree(results / "restart", local)]

        if "kill" not in skip:
            p = cluster.driver("kill", work / "kill.log")
            wait_finished(results / "kill", 8, p)
            cluster.sh("kill", "mio-w1")
            at = finished(results / "kill")
            print(f"[kill: mio-w1 killed with {at} episodes on disk]", flush=True)
            p.wait(timeout=1800)
            log = (work / "kill.log").read_text()
            n, _ = shipped(log)
            retried = [line.strip() for line in log.splitlines() if line.strip().startswith("!")]
            print(f"[kill: driver exit {p.returncode}, {n} folders shipped, retried: {len(retried)}]", flush=True)
            for line in retried:
                print(f"    {line}")
            figures["kill_retried"] = len(retried)
            if p.returncode != 0:
                problems.append(f"kill run exit {p.returncode}: {log[-2000:]}")
            if n != N_EPISODES:
                problems.append(f"kill run shipped {n} folders for {N_EPISODES} episodes (exactly once each)")
            if not retried:
                problems.append("kill: no episode was retried: the killed worker ran nothing (killed too late?)")
            problems += [f"kill: {x}" for x in check_tree(results / "kill", local)]
            left = cluster.exec("mio-w2", "sh", "-c",
                                "find / -xdev -name verdict.json 2>/dev/null | grep -v '^/app/tasks' || true")
            if left.stdout.strip():
                problems.append(f"episode folders left on worker mio-w2: {left.stdout.split()[:5]}")
    finally:
        cluster.down()
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)

    if "cluster_s" in figures:
        figures["local_eph"] = round(N_EPISODES * 3600 / figures["local_s"])
        figures["cluster_eph"] = round(N_EPISODES * 3600 / figures["cluster_s"])
        figures["cluster_over_local"] = round(figures["local_s"] / figures["cluster_s"], 2)
    print("figures: " + json.dumps(figures))
    for x in problems:
        print(f"  FAIL  {x}")
    print("cluster-test: " + ("FAILED" if problems else "PASSED"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
