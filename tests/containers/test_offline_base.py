"""scripts/make-offline-base.sh takes the Debian mirror from the machine's apt sources, both formats,
and writes containers.conf's default_ulimits once. Pure shell: no engine, no root, no network."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "make-offline-base.sh"


def mirror(apt_etc: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), "--print-mirror"], capture_output=True, text=True,
                          env={**os.environ, "APT_ETC": str(apt_etc)}, timeout=30)


def test_mirror_from_deb822_sources_skips_security_stanza(tmp_path):
    d = tmp_path / "sources.list.d"
    d.mkdir()
    (d / "debian.sources").write_text(
        "Types: deb\nURIs: http://security.example/debian-security\nSuites: bookworm-security\nComponents: main\n\n"
        "Types: deb-src\nURIs: http://src.example/debian\nSuites: bookworm\nComponents: main\n\n"
        "Types: deb\n# a comment line\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\n"
        "Components: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n")
    r = mirror(tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "http://mirror.example/debian"


def test_mirror_from_one_line_sources_list_with_options(tmp_path):
    (tmp_path / "sources.list").write_text(
        "# deb http://old.example/debian bookworm main\n"
        "deb http://security.example/debian-security bookworm-security main\n"
        "deb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian bookworm main contrib\n")
    r = mirror(tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "http://mirror.example/debian"


def test_no_bookworm_source_is_a_clear_error(tmp_path):
    (tmp_path / "sources.list").write_text("deb http://mirror.example/debian bullseye main\n")
    r = mirror(tmp_path)
    assert r.returncode != 0
    assert "no Debian bookworm mirror found" in r.stderr and str(tmp_path) in r.stderr


def test_no_package_host_is_written_into_the_script():
    text = SCRIPT.read_text()
    for host in ("deb.debian.org", "ftp.debian.org", "snapshot.debian.org"):
        assert host not in text, f"{SCRIPT.name} names {host}: the mirror must come from the machine's apt sources"
