"""Process memory as the kernel accounts it (Linux /proc), for `medimageos bench` and bench/bench_memory.py."""
from __future__ import annotations


def _rollup_kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise ValueError(f"no {field} in /proc/{pid}/smaps_rollup")


def pss_mib(pid: int) -> float:
    """Proportional set size of `pid` in MiB: private pages plus its share of shared ones."""
    return _rollup_kib(pid, "Pss") / 1024


def rss_mib(pid: int) -> float:
    """Resident set size of `pid` in MiB (shared pages counted in full)."""
    return _rollup_kib(pid, "Rss") / 1024


def anon_mib(pid: int) -> float:
    """Anonymous memory of `pid` in MiB (heap, mmapped buffers, stacks, relocated library data): the
    part no other process shares, so unlike PSS it does not move when other consoles run."""
    return _rollup_kib(pid, "Anonymous") / 1024
