"""Episode viewer: one HTML page per episode stepping through its screenshots and receipts.

Every frame (a receipt with the screenshot it names, plus any step PNG no receipt names, such as
the final screen) is rendered into the page, so it lists all steps even without JavaScript; a
little inline script shows one frame at a time with prev/next buttons, a slider and the arrow
keys. Screenshots are linked relatively (cheap for big runs) or embedded as base64 on request.
Everything the agent wrote is escaped: raw model output is untrusted text.
"""
from __future__ import annotations

import base64
import html
import json
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

from scoring.verdict import Verdict

_STEP_PNG = re.compile(r"^step_(\d+)\.png$")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_KNOWN_FIELDS = ("step", "sim_time", "status", "action", "repairs", "feedback", "raw", "screenshot")


def _safe(part: str) -> str:
    return _UNSAFE.sub("_", part) or "_"


def episode_page_name(verdict: Verdict) -> str:
    """<agent>__<task>__<subject>__seed<k>.html, with unsafe characters replaced."""
    return (f"{_safe(verdict.agent)}__{_safe(verdict.task)}__{_safe(verdict.subject)}"
            f"__seed{verdict.seed}.html")


def read_receipts(ep_dir: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The receipts of an episode and a list of problems (missing file, unreadable lines)."""
    path = Path(ep_dir) / "receipts.jsonl"
    problems: list[str] = []
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return [], ["receipts.jsonl is missing"]
    except OSError as exc:
        return [], [f"receipts.jsonl is unreadable: {exc}"]
    receipts: list[dict[str, Any]] = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"receipts.jsonl line {i} is not valid JSON ({exc.msg})")
            continue
        if not isinstance(rec, dict):
            problems.append(f"receipts.jsonl line {i} is not an object")
            continue
        receipts.append(rec)
    return receipts, problems


def episode_frames(ep_dir: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Frames in viewing order: {"screenshot": name|None, "receipt": dict|None}."""
    ep_dir = Path(ep_dir)
    receipts, problems = read_receipts(ep_dir)
    frames: list[dict[str, Any]] = []
    named: set[str] = set()
    for rec in receipts:
        shot = rec.get("screenshot")
        shot = Path(str(shot)).name if shot else None  # never follow paths out of the folder
        if shot:
            named.add(shot)
        frames.append({"screenshot": shot, "receipt": rec})
    pngs = sorted((p.name for p in ep_dir.glob("step_*.png") if _STEP_PNG.match(p.name)),
                  key=lambda n: int(_STEP_PNG.match(n).group(1)))
    for name in pngs:
        if name not in named:
            frames.append({"screenshot": name, "receipt": None})
    return frames, problems


def _img_src(png: Path, page_dir: Path, embed: bool) -> str | None:
    if not png.is_file():
        return None
    if embed:
        return "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode("ascii")
    rel = os.path.relpath(png.resolve(), page_dir.resolve())
    return quote(Path(rel).as_posix())


def _pre(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
    return f"<pre>{html.escape(text)}</pre>"


def _fmt(x: float | None, digits: int = 1) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _verdict_block(v: Verdict) -> str:
    rows = [
        ("Outcome", f'<span class="badge o-{v.outcome}">{v.outcome}</span>'),
        ("SR / PR / AQ", f"{_fmt(100 * v.sr, 0)} / {_fmt(100 * v.pr, 0)} / {_fmt(v.aq)}"),
        ("Steps (rejected)", f"{v.steps} ({v.rejected_steps})"),
        ("Termination", html.escape(v.termination)),
        ("Reason", html.escape(v.reason) or "–"),
        ("Task version", html.escape(v.task_version)),
        ("Simulated / wall time", f"{v.sim_seconds:.1f} s / {v.wall_seconds:.1f} s"),
    ]
    table = "".join(f"<tr><th>{k}</th><td>{val}</td></tr>" for k, val in rows)
    stages = "".join(
        f'<li class="{"ok" if done else "no"}">{"✓" if done else "✗"} {html.escape(name)}</li>'
        for name, done in v.stages.items()) or "<li>–</li>"
    details = (f"<details><summary>Measured details</summary>{_pre(v.details)}</details>"
               if v.details else "")
    return (f'<div class="summary"><table class="kv">{table}</table>'
            f'<div><h3>Workflow stages</h3><ul class="stages">{stages}</ul>{details}</div></div>')


def _receipt_block(rec: dict[str, Any] | None) -> str:
    if rec is None:
        return '<p class="muted">No receipt names this screenshot (e.g. the final screen).</p>'
    status = str(rec.get("status", "?"))
    rows = [
        ("Step", html.escape(str(rec.get("step", "?")))),
        ("Sim time", html.escape(_fmt(rec["sim_time"], 2) + " s"
                                 if isinstance(rec.get("sim_time"), (int, float))
                                 else str(rec.get("sim_time", "–")))),
        ("Status", f'<span class="badge s-{_safe(status)}">{html.escape(status)}</span>'),
        ("Action", _pre(rec.get("action")) if rec.get("action") is not None
         else '<span class="muted">none (not parsed)</span>'),
        ("Repairs", "<ul>" + "".join(f"<li>{html.escape(str(r))}</li>"
                                      for r in rec.get("repairs") or []) + "</ul>"
         if rec.get("repairs") else '<span class="muted">none</span>'),
        ("Feedback", html.escape(str(rec.get("feedback", ""))) or '<span class="muted">–</span>'),
        ("Raw output", _pre(str(rec.get("raw", "")))),
    ]
    extra = {k: v for k, v in rec.items() if k not in _KNOWN_FIELDS}
    if extra:
        rows.append(("Other", _pre(extra)))
    return '<table class="kv">' + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>"
                                           for k, v in rows) + "</table>"


def _summary_cell(rec: dict[str, Any] | None) -> tuple[str, str, str]:
    if rec is None:
        return "–", "", ""
    action = rec.get("action")
    if isinstance(action, dict):
        text = json.dumps(action, ensure_ascii=False)
    else:
        text = "raw: " + str(rec.get("raw", ""))
    if len(text) > 90:
        text = text[:87] + "…"
    feedback = str(rec.get("feedback", ""))
    if len(feedback) > 90:
        feedback = feedback[:87] + "…"
    return str(rec.get("status", "?")), text, feedback


def render_episode_page(ep_dir: Path, verdict: Verdict, page_path: Path,
                        embed_images: bool = False, back_href: str | None = "../report.html") -> str:
    """The HTML of one episode page (image links are made relative to `page_path`)."""
    ep_dir = Path(ep_dir)
    page_dir = Path(page_path).parent
    frames, problems = episode_frames(ep_dir)
    title = f"{verdict.agent} · {verdict.task} · {verdict.subject} · seed {verdict.seed}"

    sections, index_rows = [], []
    for i, fr in enumerate(frames):
        rec = fr["receipt"]
        shot = fr["screenshot"]
        src = _img_src(ep_dir / shot, page_dir, embed_images) if shot else None
        if src:
            img = (f'<img src="{html.escape(src)}" alt="{html.escape(shot)}" loading="lazy">')
        elif shot:
            img = f'<div class="noimg">screenshot {html.escape(shot)} is missing</div>'
        else:
            img = '<div class="noimg">this receipt names no screenshot</div>'
        label = (f"step {rec.get('step', '?')}" if rec is not None else "after last step")
        cls = " rejected" if rec is not None and rec.get("status") == "rejected" else ""
        sections.append(
            f'<section class="frame{cls}" id="f{i}" data-index="{i}">'
            f'<h2>Frame {i + 1} / {len(frames)} · {html.escape(label)}'
            f'<span class="muted"> · {html.escape(shot or "no screenshot")}</span></h2>'
            f'<div class="pair"><div class="shot">{img}</div>'
            f'<div class="receipt">{_receipt_block(rec)}</div></div></section>')
        status, action, feedback = _summary_cell(rec)
        index_rows.append(
            f'<tr class="{"rejected" if status == "rejected" else ""}">'
            f'<td><a href="#f{i}" data-goto="{i}">{i + 1}</a></td>'
            f'<td>{html.escape(str(rec.get("step", "–")) if rec else "–")}</td>'
            f'<td>{html.escape(status)}</td><td class="mono">{html.escape(action)}</td>'
            f'<td>{html.escape(feedback)}</td><td>{html.escape(shot or "–")}</td></tr>')

    problem_html = "".join(f'<p class="warn">{html.escape(p)}</p>' for p in problems)
    if not frames:
        sections.append('<p class="warn">This episode has no receipts and no screenshots.</p>')
    back = f'<a href="{html.escape(back_href)}">← report</a> · ' if back_href else ""
    return _PAGE.format(
        title=html.escape(title),
        back=back,
        folder=html.escape(str(ep_dir)),
        summary=_verdict_block(verdict),
        problems=problem_html,
        n=len(frames),
        frames="\n".join(sections),
        index="\n".join(index_rows),
        css=_CSS,
        js=_JS,
    )


def write_episode_page(ep_dir: Path, verdict: Verdict, page_path: Path,
                       embed_images: bool = False, back_href: str | None = "../report.html") -> Path:
    """Write the episode page to `page_path` and return it."""
    page_path = Path(page_path)
    page_path.parent.mkdir(parents=True, exist_ok=True)
    text = render_episode_page(ep_dir, verdict, page_path, embed_images, back_href)
    tmp = page_path.with_name(f".{page_path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, page_path)
    return page_path


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0 auto;
max-width:1500px;padding:16px 24px;color:#222;background:#fafafa;line-height:1.4}
h1{font-size:1.35em;margin:.2em 0} h2{font-size:1.05em;margin:.3em 0} h3{font-size:1em;margin:.2em 0}
.muted{color:#777;font-weight:normal} .warn{color:#8a4b00;background:#fff4e0;padding:4px 8px;border-radius:3px}
table{border-collapse:collapse} th,td{padding:3px 8px;border-bottom:1px solid #e2e2e2;vertical-align:top;text-align:left}
table.kv th{color:#555;font-weight:600;white-space:nowrap}
.summary{display:flex;gap:32px;flex-wrap:wrap;background:#fff;border:1px solid #ddd;padding:10px;border-radius:4px}
.stages{list-style:none;padding:0;margin:0} .stages .ok{color:#1b6e3a} .stages .no{color:#9b2c1f}
.badge{display:inline-block;padding:1px 7px;border-radius:3px;color:#fff;font-size:.9em;background:#666}
.o-PASS{background:#1b7f4c}.o-PARTIAL{background:#b7791f}.o-FAIL{background:#b23b2a}
.o-UNDETERMINED{background:#777}.o-INVALID{background:#4a4a6a}
.s-executed{background:#2b6cb0}.s-rejected{background:#b23b2a}
.controls{position:sticky;top:0;background:#fafafa;padding:8px 0;border-bottom:1px solid #ddd;
display:flex;gap:10px;align-items:center;z-index:2}
.controls button{font-size:1em;padding:4px 14px;cursor:pointer}
.controls input[type=range]{flex:1;max-width:600px}
.frame{background:#fff;border:1px solid #ddd;border-radius:4px;padding:8px 12px;margin:12px 0}
.frame.rejected{border-left:4px solid #b23b2a}
.pair{display:flex;gap:16px;align-items:flex-start}
.shot{flex:0 1 66%} .shot img{max-width:100%;height:auto;border:1px solid #ccc;display:block}
.receipt{flex:1 1 34%;min-width:280px;overflow:auto}
.noimg{width:100%;aspect-ratio:16/10;display:flex;align-items:center;justify-content:center;
background:#eee;color:#777;border:1px dashed #bbb}
pre{white-space:pre-wrap;word-break:break-word;max-height:18em;overflow:auto;background:#f3f3f3;
padding:4px 6px;margin:0;font-size:.85em}
.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.85em}
.index tr.rejected td{color:#9b2c1f} .index a{text-decoration:none}
body.js .frame{display:none} body.js .frame.current{display:block}
"""

_JS = """
(function(){
  var frames = document.querySelectorAll('.frame');
  if (!frames.length) return;
  document.body.classList.add('js');
  var cur = 0, slider = document.getElementById('slider'), pos = document.getElementById('pos');
  function show(i){
    i = Math.max(0, Math.min(frames.length - 1, i));
    frames[cur].classList.remove('current'); cur = i; frames[cur].classList.add('current');
    slider.value = cur; pos.textContent = (cur + 1) + ' / ' + frames.length;
    if (history.replaceState) history.replaceState(null, '', '#f' + cur);
  }
  document.getElementById('prev').onclick = function(){ show(cur - 1); };
  document.getElementById('next').onclick = function(){ show(cur + 1); };
  slider.oninput = function(){ show(parseInt(slider.value, 10)); };
  document.addEventListener('keydown', function(e){
    if (e.target && (e.target.tagName === 'INPUT' || e.target.tagName === 'TEXTAREA')) {
      if (e.target !== slider) return;
    }
    if (e.key === 'ArrowLeft') { show(cur - 1); e.preventDefault(); }
    else if (e.key === 'ArrowRight') { show(cur + 1); e.preventDefault(); }
    else if (e.key === 'Home') { show(0); e.preventDefault(); }
    else if (e.key === 'End') { show(frames.length - 1); e.preventDefault(); }
  });
  document.querySelectorAll('[data-goto]').forEach(function(a){
    a.onclick = function(e){ e.preventDefault(); show(parseInt(a.getAttribute('data-goto'), 10));
      window.scrollTo(0, document.getElementById('viewer').offsetTop); };
  });
  slider.max = frames.length - 1;
  var m = /^#f(\\d+)$/.exec(location.hash);
  frames[0].classList.add('current');
  show(m ? parseInt(m[1], 10) : 0);
})();
"""

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title><style>{css}</style></head>
<body>
<p class="muted">{back}<span class="mono">{folder}</span></p>
<h1>{title}</h1>
{summary}
{problems}
<div id="viewer">
<div class="controls"><button id="prev" title="previous (←)">← Prev</button>
<span id="pos">{n} frames</span><button id="next" title="next (→)">Next →</button>
<input type="range" id="slider" min="0" max="0" value="0" aria-label="frame">
<span class="muted">arrow keys step, Home/End jump</span></div>
{frames}
</div>
<h2>All steps</h2>
<table class="index"><thead><tr><th>#</th><th>Step</th><th>Status</th><th>Action</th>
<th>Feedback</th><th>Screenshot</th></tr></thead><tbody>
{index}
</tbody></table>
<script>{js}</script>
</body></html>
"""
