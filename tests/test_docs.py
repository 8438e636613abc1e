"""The documentation: a short README that links every page, and a docs site that builds without a warning.

The README is what a newcomer reads first, so it stays small (at most 15 KB) and points at `docs/` for the
rest; every `docs/*.md` page is linked from it and every relative link in it names a file that exists.
The site (`mkdocs.yml`, `docs/`) is built with `mkdocs build --strict` into a temporary folder, so a broken
link or anchor between pages, a link that leaves `docs/`, or a page missing from the nav fails this test
(mkdocs.yml's `validation` section makes each of them a warning, and `--strict` makes a warning an error).
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
README_MAX_BYTES = 15 * 1024
BUILD_TIMEOUT_S = 60  # the build takes about 1 s; well under pytest's 120 s limit

# [text](target) and ![alt](target); the target ends at whitespace or the closing parenthesis.
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # http:, https:, mailto:, ...


def _python() -> str:
    """The project's .venv interpreter where there is one (what `make docs` uses), else this one."""
    venv = ROOT / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def _readme_text() -> str:
    return README.read_text(encoding="utf-8")


def _without_code(markdown: str) -> str:
    """The text outside fenced code blocks and code spans: links are only links there."""
    markdown = re.sub(r"^```.*?^```[^\n]*$", "", markdown, flags=re.DOTALL | re.MULTILINE)
    return re.sub(r"`[^`\n]*`", "", markdown)


def _relative_links(markdown: str) -> list[str]:
    """Link targets that name a file of the repository: no scheme, not a bare #anchor; anchor dropped."""
    targets = []
    for target in _LINK.findall(_without_code(markdown)):
        if _EXTERNAL.match(target) or target.startswith("#"):
            continue
        targets.append(target.split("#", 1)[0])
    return targets


def test_mkdocs_build_strict_has_no_warning(tmp_path: Path) -> None:
    site = tmp_path / "site"
    proc = subprocess.run([_python(), "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(ROOT / "mkdocs.yml"), "--site-dir", str(site)],
                          cwd=ROOT, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{log}"
    warnings = [line for line in log.splitlines() if "WARNING" in line or "ERROR" in line]
    assert not warnings, "mkdocs build warned:\n" + "\n".join(warnings)
    # mkdocs.yml sets use_directory_urls: false, so docs/NAME.md becomes site/NAME.html
    missing = sorted(p.name for p in DOCS.glob("*.md") if not (site / f"{p.stem}.html").exists())
    assert not missing, f"pages not built: {missing}"


def test_readme_is_at_most_15_kb() -> None:
    size = README.stat().st_size
    assert size <= README_MAX_BYTES, (f"README.md is {size} bytes, over {README_MAX_BYTES}: move detail into a "
                                      "docs/ page and link it")


def test_readme_links_every_docs_page() -> None:
    linked = {(ROOT / t).resolve() for t in _relative_links(_readme_text())}
    pages = sorted(DOCS.glob("*.md"))
    assert pages, "docs/ holds no pages"
    unlinked = [p.relative_to(ROOT).as_posix() for p in pages if p.resolve() not in linked]
    assert not unlinked, f"docs pages the README does not link (add [docs/NAME.md](docs/NAME.md)): {unlinked}"


def test_readme_relative_links_name_existing_files() -> None:
    targets = _relative_links(_readme_text())
    assert targets, "the README has no relative links"
    broken = sorted({t for t in targets if not (ROOT / t).exists()})
    assert not broken, f"README links to files that do not exist: {broken}"


def test_link_helper_finds_links_and_skips_code_and_urls() -> None:
    """The link scanner itself: a link in prose counts; in code, external or a bare anchor it does not."""
    text = ("See [a](docs/a.md#part) and ![img](pics/x.png \"t\").\n"
            "`[not](docs/code-span.md)` [web](https://example.org/x.md) [here](#top)\n"
            "```md\n[fenced](docs/fenced.md)\n```\n")
    assert _relative_links(text) == ["docs/a.md", "pics/x.png"]
