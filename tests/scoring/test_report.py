"""Reports: Markdown + self-contained HTML with embedded plots, and episode viewer pages."""
from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path

from PIL import Image

from tasks.card import Budgets, TaskCard
from scoring.episode_viewer import episode_frames, episode_page_name
from scoring.report import write_report
from scoring.verdict import Verdict

SR_OF = {"PASS": 1.0, "PARTIAL": 0.0, "FAIL": 0.0, "UNDETERMINED": 0.0, "INVALID": 0.0}


def card(task_id: str, level: int, modality: str) -> TaskCard:
    return TaskCard(id=task_id, version="1", modality=modality, level=level, title=task_id,
                    goal="Do the synthetic thing on the console.", budgets=Budgets(max_steps=20),
                    oracle="synthetic")


CARDS = [card("ct_scout", 0, "ct"), card("mr_plan", 3, "mr"), card("us_sweep", 6, "us")]


def png_bytes(shade: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (16, 10), (shade, shade, shade)).save(buf, format="PNG")
    return buf.getvalue()


def write_episode(root: Path, agent: str, task: str, modality: str, level: int, outcome: str,
                  seed: int = 0, subject: str = "s01", n_steps: int = 3,
                  skip_pngs: tuple[int, ...] = (), finished: bool = True,
                  termination: str = "done") -> Path:
    ep = root / agent / task / subject / f"seed{seed}"
    ep.mkdir(parents=True)
    lines = []
    for k in range(n_steps):
        if k not in skip_pngs:
            (ep / f"step_{k:03d}.png").write_bytes(png_bytes(40 * k % 255))
        rejected = k == 1
        lines.append(json.dumps({
            "step": k, "sim_time": 0.5 * k,
            "raw": "<script>alert(1)</script>" if rejected else f'{{"type": "click", "x": {k}}}',
            "action": None if rejected else {"type": "click", "x": k, "y": 5},
            "repairs": ["scaled from 0-1000 grid"] if k == 2 else [],
            "status": "rejected" if rejected else "executed",
            "feedback": "not JSON" if rejected else "ok",
            "screenshot": f"step_{k:03d}.png"}))
    (ep / f"step_{n_steps:03d}.png").write_bytes(png_bytes(250))  # final screen, no receipt
    (ep / "receipts.jsonl").write_text("\n".join(lines) + "\n")
    (ep / "state.json").write_text("{}")
    if finished:
        v = Verdict(task=task, task_version="1", modality=modality, level=level, subject=subject,
                    seed=seed, agent=agent, outcome=outcome, sr=SR_OF[outcome], pr=0.5, aq=42.0,
                    steps=n_steps, rejected_steps=1, termination=termination,
                    stages={"scout": True, "plan": outcome == "PASS"})
        (ep / "verdict.json").write_text(v.model_dump_json())
    return ep


def build_tree(root: Path) -> None:
    write_episode(root, "reference", "ct_scout", "ct", 0, "PASS")
    write_episode(root, "reference", "ct_scout", "ct", 0, "PASS", seed=1)
    write_episode(root, "reference", "mr_plan", "mr", 3, "PASS", skip_pngs=(0,))
    write_episode(root, "reference", "us_sweep", "us", 6, "INVALID", termination="fault")
    write_episode(root, "noop", "ct_scout", "ct", 0, "FAIL", termination="budget")
    write_episode(root, "noop", "mr_plan", "mr", 3, "PARTIAL", finished=False)  # unfinished
    bad = root / "noop" / "us_sweep" / "s01" / "seed0"
    bad.mkdir(parents=True)
    (bad / "verdict.json").write_text("not json")


def test_report_files_tables_and_embedded_plots(tmp_path):
    build_tree(tmp_path)
    page = write_report(tmp_path, cards=CARDS)
    out = tmp_path / "report"
    assert page == out / "report.html"
    assert (out / "report.md").exists()
    for name in ("ladder", "modalities", "failures"):
        assert (out / "plots" / f"{name}.png").stat().st_size > 1000

    text = page.read_text()
    imgs = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', text)
    assert len(imgs) == 3
    for data in imgs:
        Image.open(io.BytesIO(base64.b64decode(data))).verify()
    assert "Agents side by side" in text and "<table" in text
    for header in ("Task", "Modality", "Level", "SR", "PR", "AQ", "Outcomes"):
        assert f"<th>{header}</th>" in text
    for task in ("ct_scout", "mr_plan", "us_sweep"):
        assert task in text
    # reference: ct 1.0 (L0, w1), mr 1.0 (L3, w4), us missing (INVALID only) -> 100*5/12
    assert f"{100 * 5 / 12:.1f}" in text
    assert "us_sweep" in text and "Missing" in text
    assert "1 unfinished" in text and "1 corrupt" in text
    assert str(tmp_path / "noop" / "us_sweep" / "s01" / "seed0" / "verdict.json") in text

    md = (out / "report.md").read_text()
    assert "| Agent | Score |" in md and "plots/ladder.png" in md
    assert "episodes/reference__ct_scout__s01__seed0.html" in md


def test_episode_pages_linked_and_list_every_step(tmp_path):
    build_tree(tmp_path)
    write_report(tmp_path, cards=CARDS)
    out = tmp_path / "report"
    pages = sorted(p.name for p in (out / "episodes").glob("*.html"))
    # five finished episodes (4 reference + 1 noop); unfinished and corrupt get no page
    assert pages == sorted([
        "noop__ct_scout__s01__seed0.html", "reference__ct_scout__s01__seed0.html",
        "reference__ct_scout__s01__seed1.html", "reference__mr_plan__s01__seed0.html",
        "reference__us_sweep__s01__seed0.html"])
    report = (out / "report.html").read_text()
    for name in pages:
        assert f'href="episodes/{name}"' in report

    page = (out / "episodes" / "reference__ct_scout__s01__seed0.html").read_text()
    # 3 receipts + the final screenshot no receipt names
    assert page.count('<section class="frame') == 4
    for k in range(4):
        assert f"step_{k:03d}.png" in page
    assert 'id="prev"' in page and 'id="next"' in page and "ArrowRight" in page
    assert "<script>alert(1)</script>" not in page  # raw output escaped
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "scaled from 0-1000 grid" in page
    # images are linked relatively and resolve to the real files
    srcs = re.findall(r'<img src="([^"]+)"', page)
    assert len(srcs) == 4
    for src in srcs:
        assert (out / "episodes" / src).resolve().is_file()
    assert 'href="../report.html"' in page


def test_episode_page_with_missing_png_and_no_receipts(tmp_path):
    build_tree(tmp_path)
    ep = tmp_path / "reference" / "mr_plan" / "s01" / "seed0"
    write_report(tmp_path, cards=CARDS)
    page = (tmp_path / "report" / "episodes" / "reference__mr_plan__s01__seed0.html").read_text()
    assert "screenshot step_000.png is missing" in page

    (ep / "receipts.jsonl").unlink()
    frames, problems = episode_frames(ep)
    assert [f["screenshot"] for f in frames] == ["step_001.png", "step_002.png", "step_003.png"]
    assert problems == ["receipts.jsonl is missing"]
    (ep / "receipts.jsonl").write_text('{"step": 0, "screenshot": "step_001.png"}\n{broken\n')
    frames, problems = episode_frames(ep)
    assert len(frames) == 3 and "line 2" in problems[0]
    write_report(tmp_path, cards=CARDS)  # still renders


def test_embedded_episode_images_and_custom_out_dir(tmp_path):
    build_tree(tmp_path / "run")
    out = tmp_path / "elsewhere"
    page = write_report(tmp_path / "run", out_dir=out, cards=CARDS, embed_episode_images=True)
    assert page == out / "report.html"
    ep_page = (out / "episodes" / "reference__ct_scout__s01__seed1.html").read_text()
    assert ep_page.count('src="data:image/png;base64,') == 4


def test_report_with_no_episodes(tmp_path):
    page = write_report(tmp_path, cards=CARDS)
    text = page.read_text()
    assert "No finished episodes" in text
    assert text.count("data:image/png;base64,") == 3
    assert (tmp_path / "report" / "report.md").exists()


def test_report_with_empty_levels_and_unknown_task(tmp_path):
    write_episode(tmp_path, "solo", "ct_scout", "ct", 0, "PASS")
    write_episode(tmp_path, "solo", "extra_task", "ct", 2, "FAIL")
    text = write_report(tmp_path, cards=CARDS).read_text()
    assert "extra_task" in text and "(no card)" in text


def test_page_names_are_filesystem_safe():
    v = Verdict(task="t", task_version="1", modality="ct", level=0, subject="s 1", seed=3,
                agent="org/model:7b", outcome="FAIL", sr=0, pr=0, aq=0, steps=1,
                termination="done")
    assert episode_page_name(v) == "org_model_7b__t__s_1__seed3.html"
