"""`medimageos report DIR`: Markdown and a self-contained HTML report, plus episode pages.

Writes into DIR/report/ (or `out_dir`):
  report.md            tables, plots linked from plots/*.png
  report.html          the same, plots embedded as base64 PNG (the page stands alone)
  plots/*.png          capability ladder, SR/PR/AQ per modality, failure breakdown
  episodes/<agent>__<task>__<subject>__seed<k>.html   one viewer page per finished episode

Every SR, PR, AQ and score is shown with its 95 % cluster-bootstrap interval over subjects
(scoring/intervals.py), '34.0 [28.1, 40.2]'; a dagger marks a degenerate interval (one subject).
With `baselines` (a `medimageos baselines --out` folder) the blind baselines get rows beside the models.

Plots use matplotlib's Agg canvas through `Figure` directly (no pyplot, no GUI backend).
"""
from __future__ import annotations

import base64
import html
import io
import math
import os
from pathlib import Path
from typing import Any, Sequence

from matplotlib.figure import Figure
from matplotlib.patches import Patch

from tasks.card import TaskCard
from scoring.aggregate import (LEVELS, OUTCOMES, TERMINATIONS, ResultsScan, aggregate,
                               atomic_write_text, merge_scans, scan_results)
from scoring.intervals import format_interval
from scoring.episode_viewer import episode_page_name, write_episode_page

OUTCOME_COLORS = {"PASS": "#1b7f4c", "PARTIAL": "#e0a030", "FAIL": "#c0503a",
                  "UNDETERMINED": "#a0a0a0", "INVALID": "#4a4a6a"}
TERMINATION_COLORS = {"done": "#3b75af", "budget": "#e0a030", "fault": "#8c3b8c"}
METRIC_COLORS = {"SR": "#2b5d8c", "PR": "#6aa5d6", "AQ": "#5a9a68"}
AGENT_MARKERS = "osD^v<>pPX*h"


# --------------------------------------------------------------------------- formatting

def _f(x: float | None, digits: int = 1) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _share(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _outcome_text(counts: dict[str, int]) -> str:
    parts = [f"{o[0] if o != 'PARTIAL' else 'Pa'}{counts[o]}" for o in OUTCOMES if counts.get(o)]
    return " ".join(parts) or "–"


def _outcome_html(counts: dict[str, int]) -> str:
    parts = [f'<span class="oc" style="background:{OUTCOME_COLORS[o]}" title="{o}">'
             f'{o.title()[:4]} {counts[o]}</span>' for o in OUTCOMES if counts.get(o)]
    return " ".join(parts) or "–"


def _ci(block: dict[str, Any], metric: str) -> str:
    """A stats block's point estimate of `metric` with its interval, if it has one."""
    return format_interval(block.get(metric), (block.get("ci") or {}).get(metric))


def _agent_label(agent: str, a: dict[str, Any]) -> str:
    """Baseline agents are named baseline-*; any other agent flagged as one gets the word added."""
    return f"{agent} (baseline)" if a.get("baseline") and not agent.startswith("baseline-") else agent


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


# --------------------------------------------------------------------------- plots

def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight", facecolor="white")
    return buf.getvalue()


def _nodata(fig: Figure, title: str) -> bytes:
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.text(0.5, 0.5, "no finished episodes", ha="center", va="center", fontsize=13, color="#777")
    ax.set_title(title)
    return _png(fig)


def _agent_colors(agents: Sequence[str]) -> dict[str, Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if len(agents) <= 10 else "tab20"]
    return {a: cmap(i % cmap.N) for i, a in enumerate(agents)}


def plot_ladder(scores: dict[str, Any]) -> bytes:
    """SR by level L0-L6, one line per agent; levels without valid episodes are gaps."""
    agents = list(scores["agents"])
    fig = Figure(figsize=(9, 4.6))
    title = "Capability ladder: SR by level"
    if not agents:
        return _nodata(fig, title)
    ax = fig.add_subplot()
    colors = _agent_colors(agents)
    xs = list(LEVELS)
    for k, agent in enumerate(agents):
        by_level = scores["agents"][agent]["by_level"]
        ys = [by_level[f"L{i}"]["sr"] for i in xs]
        ys = [math.nan if y is None else y for y in ys]
        ax.plot(xs, ys, marker=AGENT_MARKERS[k % len(AGENT_MARKERS)], markersize=7, linewidth=2,
                color=colors[agent], label=agent)
    ax.set_xticks(xs, [f"L{i}" for i in xs])
    ax.set_xlim(-0.3, 6.3)
    ax.set_ylim(-3, 103)
    ax.set_xlabel("capability level")
    ax.set_ylabel("SR (%)")
    ax.grid(True, axis="y", color="#e5e5e5")
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.set_title(f"{title} (episode mean over valid episodes; gaps: none run)", fontsize=11)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=9)
    return _png(fig)


def plot_modalities(scores: dict[str, Any]) -> bytes:
    """SR, PR and AQ side by side per modality, one panel per agent."""
    agents = list(scores["agents"])
    title = "SR vs PR vs AQ per modality"
    if not agents:
        return _nodata(Figure(figsize=(8, 3)), title)
    ncols = min(len(agents), 3)
    nrows = math.ceil(len(agents) / ncols)
    fig = Figure(figsize=(4.2 * ncols + 0.6, 3.3 * nrows + 0.6))
    axes = fig.subplots(nrows, ncols, squeeze=False, sharey=True)
    width = 0.26
    for idx, agent in enumerate(agents):
        ax = axes[idx // ncols][idx % ncols]
        by_mod = scores["agents"][agent]["by_modality"]
        mods = list(by_mod)
        for j, metric in enumerate(("SR", "PR", "AQ")):
            for m_i, mod in enumerate(mods):
                val = by_mod[mod][metric.lower()]
                x = m_i + (j - 1) * width
                if val is None:
                    ax.text(x, 2, "n/a", ha="center", va="bottom", fontsize=7, color="#999",
                            rotation=90)
                    continue
                ax.bar(x, val, width, color=METRIC_COLORS[metric],
                       label=metric if m_i == 0 else None)
                ax.text(x, val + 1.5, f"{val:.0f}", ha="center", va="bottom", fontsize=7,
                        color="#333")
        ax.set_xticks(range(len(mods)),
                      [f"{m.upper()}\n(n={by_mod[m]['n_valid']})" for m in mods])
        ax.set_ylim(0, 110)
        ax.set_yticks([0, 25, 50, 75, 100])
        ax.grid(True, axis="y", color="#e5e5e5")
        ax.set_axisbelow(True)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        ax.set_title(agent, fontsize=10)
        if idx % ncols == 0:
            ax.set_ylabel("0-100")
    for idx in range(len(agents), nrows * ncols):
        axes[idx // ncols][idx % ncols].set_axis_off()
    handles = [Patch(color=c, label=k) for k, c in METRIC_COLORS.items()]
    fig.legend(handles=handles, loc="upper center", ncol=3, frameon=False,
               bbox_to_anchor=(0.5, 1.0 + 0.02 / nrows))
    fig.suptitle(title + " (never merged; INVALID excluded)", y=1.0 + 0.09 / nrows, fontsize=11)
    fig.tight_layout()
    return _png(fig)


def plot_failures(scores: dict[str, Any]) -> bytes:
    """Stacked outcome counts and stacked termination counts per agent (all episodes)."""
    agents = list(scores["agents"])
    title = "Failure breakdown"
    if not agents:
        return _nodata(Figure(figsize=(8, 3)), title)
    fig = Figure(figsize=(11, 1.2 + 0.45 * len(agents) + 0.8))
    ax_o, ax_t = fig.subplots(1, 2, sharey=True)
    ys = list(range(len(agents)))[::-1]
    for ax, keys, colors, field, label in (
            (ax_o, OUTCOMES, OUTCOME_COLORS, "outcomes", "outcome"),
            (ax_t, TERMINATIONS, TERMINATION_COLORS, "terminations_all", "termination")):
        left = [0] * len(agents)
        totals = [sum(scores["agents"][a]["overall"][field].values()) for a in agents]
        for key in keys:
            vals = [scores["agents"][a]["overall"][field][key] for a in agents]
            ax.barh(ys, vals, left=left, color=colors[key], label=key, height=0.62,
                    edgecolor="white", linewidth=0.6)
            for y, lft, v, total in zip(ys, left, vals, totals):
                if v and total and v / total >= 0.07:
                    ax.text(lft + v / 2, y, str(v), ha="center", va="center", fontsize=8,
                            color="white" if key not in ("PARTIAL", "budget", "UNDETERMINED")
                            else "#222")
            left = [lft + v for lft, v in zip(left, vals)]
        ax.set_yticks(ys, agents)
        ax.set_xlabel("episodes")
        ax.set_title(f"by {label}", fontsize=10, pad=24)
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=len(keys), frameon=False,
                  fontsize=8, handlelength=1.2, columnspacing=1.0)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    fig.suptitle(title + " (counts include INVALID episodes)", fontsize=11)
    fig.tight_layout()
    return _png(fig)


# --------------------------------------------------------------------------- tables

def _agents_rows(scores: dict[str, Any]) -> list[list[str]]:
    rows = []
    for agent, a in scores["agents"].items():
        o = a["overall"]
        rows.append([_agent_label(agent, a), _ci(o, "score"), _ci(o, "sr"), _ci(o, "pr"), _ci(o, "aq"),
                     str(a.get("n_subjects", "–")), str(o["n"]),
                     str(o["n_valid"]), str(o["outcomes"]["INVALID"]), _share(o["budget_share"]),
                     _share(o["rejected_share"]),
                     f"{len(o['missing_tasks'])}/{o['score_tasks']}"]
                    + [_f(a["by_level"][f"L{i}"]["sr"], 0) for i in LEVELS])
    return rows


AGENT_HEADERS = (["Agent", "Score", "SR", "PR", "AQ", "subjects", "n",
                  "valid", "INVALID", "budget",
                  "rejected", "missing"] + [f"L{i}" for i in LEVELS])
TASK_HEADERS = ["Task", "Modality", "Level", "n", "valid", "SR", "PR", "AQ",
                "Outcomes", "budget", "rejected"]
GROUP_HEADERS = ["Group", "n", "valid", "subjects", "SR", "PR", "AQ",
                 "SR task mean"]


def _task_rows(agent_scores: dict[str, Any]) -> list[tuple[str, dict[str, Any], list[str]]]:
    rows = []
    for task, t in agent_scores["by_task"].items():
        rows.append((task, t, [task, t["modality"].upper(), f"L{t['level']}", str(t["n"]),
                               str(t["n_valid"]), _ci(t, "sr"), _ci(t, "pr"), _ci(t, "aq"),
                               _outcome_text(t["outcomes"]), _share(t["budget_share"]),
                               _share(t["rejected_share"])]))
    return rows


def _group_rows(agent_scores: dict[str, Any]) -> list[list[str]]:
    """One row per modality and per level (levels with tasks or episodes), with intervals."""
    rows = []
    groups = [(m.upper(), b) for m, b in agent_scores["by_modality"].items()]
    groups += [(lvl, b) for lvl, b in agent_scores["by_level"].items() if b["n"] or b.get("n_tasks")]
    for name, b in groups:
        subj = (b.get("ci") or {}).get("sr", {}).get("n_subjects", "–")
        rows.append([name, str(b["n"]), str(b["n_valid"]), str(subj), _ci(b, "sr"), _ci(b, "pr"), _ci(b, "aq"),
                     _ci(b, "sr_task_mean") if "sr_task_mean" in b else "–"])
    return rows


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join(["---"] * len(headers)) + "|"]
    out += ["| " + " | ".join(_md_escape(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def _html_table(headers: Sequence[str], rows: Sequence[Sequence[str]], cls: str = "",
                numeric_from: int = 1, text_cols: Sequence[int] = ()) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(
            f'<td class="{"num" if i >= numeric_from and i not in text_cols else ""}">{c}</td>'
            for i, c in enumerate(r))
        + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _task_matrix(scores: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Tasks down, agents across: SR per task (the quantity the score weights)."""
    agents = list(scores["agents"])
    tasks: dict[str, tuple[str, int]] = {}
    for a in agents:
        for task, t in scores["agents"][a]["by_task"].items():
            tasks.setdefault(task, (t["modality"], t["level"]))
    headers = ["Task", "Modality", "Level", "weight"] + agents
    rows = []
    for task, (mod, level) in sorted(tasks.items(), key=lambda kv: (kv[1][1], kv[1][0], kv[0])):
        cells = [task, mod.upper(), f"L{level}", str(level + 1) if task in scores["cards"] else "–"]
        for a in agents:
            t = scores["agents"][a]["by_task"].get(task)
            cells.append("–" if t is None or t["sr"] is None else _f(t["sr"]))
        rows.append(cells)
    return headers, rows


# --------------------------------------------------------------------------- the report

def _default_cards() -> list[TaskCard]:
    from tasks.card import all_cards

    return list(all_cards())


def write_report(dir: Path | str, out_dir: Path | str | None = None,
                 cards: Sequence[TaskCard] | None = None, embed_episode_images: bool = False,
                 episode_pages: bool = True, baselines: Path | str | None = None) -> Path:
    """Write report.md, report.html, plots and episode pages; return the path of report.html.

    `cards` defaults to every shipped task card (they define the score's tasks and levels).
    Episode pages link screenshots relatively unless `embed_episode_images` is set.
    `baselines` is a folder of blind baselines (`medimageos baselines --out`): its agents are shown
    beside DIR's (no episode pages: headless baseline episodes have no screens).
    """
    root = Path(dir)
    out = Path(out_dir) if out_dir is not None else root / "report"
    scan = scan_results(root)
    own_agents = {e.verdict.agent for e in scan.episodes}
    if baselines is not None:
        scan = merge_scans(scan, scan_results(baselines))
    out.mkdir(parents=True, exist_ok=True)
    scores = aggregate(scan.verdicts, list(cards) if cards is not None else _default_cards())
    # leaderboard order everywhere in the report: best overall score first
    scores["agents"] = dict(sorted(
        scores["agents"].items(),
        key=lambda kv: (-(kv[1]["overall"]["score"] or 0.0), kv[0])))

    plots = {
        "ladder": ("Capability ladder", plot_ladder(scores)),
        "modalities": ("SR, PR and AQ per modality", plot_modalities(scores)),
        "failures": ("Failure breakdown", plot_failures(scores)),
    }
    (out / "plots").mkdir(exist_ok=True)
    for name, (_, png) in plots.items():
        tmp = out / "plots" / f".{name}.png.tmp"
        tmp.write_bytes(png)
        os.replace(tmp, out / "plots" / f"{name}.png")

    # episode pages, grouped for the per-task tables: (agent, task) -> [(label, outcome, href)]
    links: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    ep_dir_out = out / "episodes"
    back = os.path.relpath(out / "report.html", ep_dir_out).replace(os.sep, "/")
    for ep in scan.episodes:
        v = ep.verdict
        if v.agent not in own_agents:
            continue  # a baselines folder's episode
        name = episode_page_name(v)
        if episode_pages:
            write_episode_page(ep.path, v, ep_dir_out / name, embed_images=embed_episode_images,
                               back_href=back)
        links.setdefault((v.agent, v.task), []).append(
            (f"{v.subject}/seed{v.seed}", v.outcome, f"episodes/{name}"))

    md = _render_md(scan, scores, plots, links if episode_pages else {})
    page = _render_html(scan, scores, plots, links if episode_pages else {})
    atomic_write_text(out / "report.md", md)
    atomic_write_text(out / "report.html", page)
    return out / "report.html"


def _collection_lines(scan: ResultsScan) -> list[str]:
    lines = [f"{len(scan.episodes)} finished episodes, {len(scan.unfinished)} unfinished "
             f"(ignored), {len(scan.corrupt)} corrupt verdict files (ignored)."]
    lines += [f"corrupt verdict: {c.path}: {c.error}" for c in scan.corrupt]
    lines += [f"warning: {w}" for w in scan.warnings]
    return lines


_NOTES = ("SR, PR and AQ are 0-100 means over valid episodes, reported side by side and never "
          "merged. INVALID episodes are counted but excluded from every denominator. Score = "
          "100·Σ(i+1)Σ s_ij / Σ(i+1)·n_i over the task cards (level weights w_i = i+1); a task "
          "without valid episodes counts 0 and is listed as missing. 'budget' is the share of "
          "valid episodes that exhausted their step budget, 'rejected' the share of rejected "
          "actions among all steps. Level columns are episode-pooled SR. Brackets: 95 % interval of "
          "a cluster bootstrap over subjects (all of a subject's episodes resampled together); † marks a "
          "degenerate interval (fewer than two subjects). Rows named baseline-* are blind baselines "
          "(`medimageos baselines`): a model's score means something only above theirs.")


def _render_md(scan: ResultsScan, scores: dict[str, Any], plots: dict[str, tuple[str, bytes]],
               links: dict[tuple[str, str], list[tuple[str, str, str]]]) -> str:
    parts = ["# MedImageOSWorld report", "", f"Results: `{scan.root}`", ""]
    parts += [f"- {line}" for line in _collection_lines(scan)]
    parts += ["", f"Score denominator Σ(i+1)·n_i = {scores['weight_denominator']} over "
              f"{len(scores['cards'])} task cards.", "", _NOTES, "", _method_line(scores), "", "## Agents", ""]
    parts += [_md_table(AGENT_HEADERS, _agents_rows(scores)) if scores["agents"]
              else "_No finished episodes._", ""]
    for name, (title, _) in plots.items():
        parts += [f"## {title}", "", f"![{title}](plots/{name}.png)", ""]
    headers, rows = _task_matrix(scores)
    if scores["agents"]:
        parts += ["## SR per task, agents side by side", "", _md_table(headers, rows), ""]
    for agent, a in scores["agents"].items():
        parts += [f"## {_agent_label(agent, a)}: per modality and level", "",
                  _md_table(GROUP_HEADERS, _group_rows(a)), ""]
        parts += [f"## {_agent_label(agent, a)}: per task", ""]
        missing = a["overall"]["missing_tasks"]
        if missing:
            parts += [f"Missing (no valid episodes, count 0): {', '.join(missing)}", ""]
        rows = []
        for task, _t, cells in _task_rows(a):
            eps = links.get((agent, task), [])
            cells = cells + [" ".join(f"[{lbl}:{o[:2]}]({href})" for lbl, o, href in eps) or "–"]
            rows.append(cells)
        parts += [_md_table(TASK_HEADERS + ["Episodes"], rows), ""]
    return "\n".join(parts) + "\n"


def _method_line(scores: dict[str, Any]) -> str:
    m = scores.get("intervals")
    if not m:
        return "Intervals: not computed."
    return (f"Intervals: {m['method']} over {m['resampling_unit']}s, {m['resamples']} resamples, seed "
            f"{m['seed']}, {100 * m['confidence']:g} % {m['interval']} interval.")


def _img_tag(title: str, png: bytes) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (f'<figure><img alt="{html.escape(title)}" src="data:image/png;base64,{data}">'
            f"</figure>")


def _render_html(scan: ResultsScan, scores: dict[str, Any], plots: dict[str, tuple[str, bytes]],
                 links: dict[tuple[str, str], list[tuple[str, str, str]]]) -> str:
    body = [f"<h1>MedImageOSWorld report</h1><p class=\"muted mono\">{html.escape(str(scan.root))}"
            f"</p>"]
    coll = _collection_lines(scan)
    body.append("<ul class=\"coll\">" + "".join(
        f'<li class="{"warn" if i else ""}">{html.escape(l)}</li>' for i, l in enumerate(coll))
        + "</ul>")
    body.append(f"<p class=\"note\">{html.escape(_NOTES)} Score denominator Σ(i+1)·n_i = "
                f"{scores['weight_denominator']} over {len(scores['cards'])} task cards. "
                f"{html.escape(_method_line(scores))}</p>")
    body.append('<h2 id="agents">Agents side by side</h2>')
    if scores["agents"]:
        rows = [[f"<b>{html.escape(r[0])}</b>"] + r[1:] for r in _agents_rows(scores)]
        body.append(_html_table(AGENT_HEADERS, rows, "agents"))
        body.append("<p>Per-task tables and episodes: " + " · ".join(
            f'<a href="#agent-{html.escape(a)}">{html.escape(a)}</a>' for a in scores["agents"])
            + "</p>")
    else:
        body.append('<p class="muted">No finished episodes.</p>')
    for name, (title, png) in plots.items():
        body.append(f'<h2 id="plot-{name}">{html.escape(title)}</h2>{_img_tag(title, png)}')
    if scores["agents"]:
        headers, rows = _task_matrix(scores)
        body.append('<h2 id="matrix">SR per task, agents side by side</h2>')
        body.append(_html_table(headers, [[html.escape(c) for c in r] for r in rows], "matrix", 3))
    for agent, a in scores["agents"].items():
        body.append(f'<h2 id="agent-{html.escape(agent)}">{html.escape(_agent_label(agent, a))}: per task</h2>')
        body.append(_html_table(GROUP_HEADERS, [[html.escape(c) for c in r] for r in _group_rows(a)], "groups"))
        missing = a["overall"]["missing_tasks"]
        if missing:
            body.append(f'<p class="warn">Missing (no valid episodes, count 0): '
                        f'{html.escape(", ".join(missing))}</p>')
        rows = []
        for task, t, cells in _task_rows(a):
            cells = [html.escape(c) for c in cells]
            cells[0] = f'<span class="mono">{cells[0]}</span>' + (
                "" if t["in_cards"] else ' <span class="muted">(no card)</span>')
            cells[8] = _outcome_html(t["outcomes"])
            eps = links.get((agent, task), [])
            if eps:
                items = " ".join(
                    f'<a class="ep" href="{html.escape(href)}" style="border-color:'
                    f'{OUTCOME_COLORS[o]}" title="{o}">{html.escape(lbl)}</a>'
                    for lbl, o, href in eps)
                cells.append(f"<details><summary>{len(eps)} episode"
                             f"{'s' if len(eps) != 1 else ''}</summary>{items}</details>")
            else:
                cells.append('<span class="muted">–</span>')
            rows.append(cells)
        body.append(_html_table(TASK_HEADERS + ["Episodes"], rows, "tasks", 3, (8, 11)))
    return _HTML.format(css=_CSS, body="\n".join(body))


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0 auto;
max-width:1250px;padding:16px 28px 48px;color:#222;background:#fafafa;line-height:1.45}
h1{font-size:1.5em;margin:.3em 0} h2{font-size:1.15em;margin:1.6em 0 .5em;border-bottom:1px solid #ddd;
padding-bottom:3px}
.muted{color:#777} .mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.9em}
.note{color:#444;font-size:.92em;background:#fff;border:1px solid #e2e2e2;padding:8px 12px;border-radius:4px}
.warn{color:#8a4b00} ul.coll{padding-left:1.2em}
table{border-collapse:collapse;background:#fff;font-size:.92em;margin:4px 0}
th,td{padding:4px 9px;border-bottom:1px solid #e6e6e6;text-align:left;vertical-align:top}
th{background:#f0f0f0;font-weight:600;position:sticky;top:0}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tbody tr:nth-child(even){background:#fbfbfb} tbody tr:hover{background:#f2f6fa}
figure{margin:6px 0} figure img{max-width:100%;height:auto;border:1px solid #e2e2e2;background:#fff}
.oc{display:inline-block;color:#fff;border-radius:3px;padding:0 5px;margin:1px 0;font-size:.85em}
a.ep{display:inline-block;border-left:4px solid #999;padding:0 5px;margin:2px 3px 2px 0;
background:#f4f4f4;text-decoration:none;color:#224;font-size:.85em}
details summary{cursor:pointer;color:#2b5d8c}
"""

_HTML = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>MedImageOSWorld report</title><style>{css}</style></head>
<body>
{body}
</body></html>
"""
