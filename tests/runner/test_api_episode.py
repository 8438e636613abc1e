"""The model-backed agent in a real episode: real console, real X input, the real openai client
against a local OpenAI-compatible server with scripted replies (malformed, rate limit, timeout)."""
from __future__ import annotations

import base64
import json

from runner.agents.api import ApiAgent
from runner.episode import EpisodeSpec, run_episode
from runner.results import episode_dir
from tasks.card import load_card
from tests.runner.fake_openai_server import fake_openai, rate_limit, server_error, slow

TASK = "ct_ui_smoke_routine"


def test_api_agent_episode_records_raw_output_repairs_and_rejections(display, tmp_path):
    card = load_card(TASK)
    script = [
        "I think I should click the protocol list.",                     # prose, no action: rejected
        rate_limit(0.0), '```json\n{"action": "click", "x": 158, "y": 84}\n```',  # 429, then fenced JSON
        slow(30.0), '{"action": "key", "key": "F13"}',                     # timeout, then a key not allowed
        '{"type": "wait", "seconds": 2}',                                  # 'type' as discriminator: repaired
        server_error(500), server_error(500),
        server_error(500), server_error(500), server_error(500),          # keeps failing: INVALID
    ]
    with fake_openai(script) as server:
        agent = ApiAgent("test-model", server.base_url, timeout_s=1.0, max_retries=2, sleep=lambda s: None)
        v = run_episode(EpisodeSpec(card, "dev", 0), agent, tmp_path, display)
        requests = list(server.requests)
    assert v.outcome == "INVALID" and v.termination == "fault" and "agent fault" in v.reason
    d = episode_dir(tmp_path, agent.name, TASK, "dev", 0)
    receipts = [json.loads(x) for x in (d / "receipts.jsonl").read_text().splitlines()]
    r0, r1, r2, r3, r4 = receipts
    assert r0["status"] == "rejected" and r0["raw"].startswith("I think") and "parse" in r0["feedback"]
    assert r1["status"] == "executed" and r1["action"] == {"action": "click", "x": 158, "y": 84, "button": "left"}
    assert r1["repairs"], "extracting JSON from a code fence is a repair"
    assert r1["model_call"]["attempts"] == 2 and "RateLimitError" in r1["model_call"]["errors"][0]
    assert r2["status"] == "rejected" and "allowed" in r2["feedback"]
    assert "APITimeoutError" in r2["model_call"]["errors"][0]
    assert r3["status"] == "executed" and r3["action"] == {"action": "wait", "seconds": 2.0} and r3["repairs"]
    assert r3["sim_time"] == r1["sim_time"] + 2.0
    assert r4["status"] == "rejected" and r4["action"] is None and "agent fault" in r4["feedback"]
    # the model saw the real screenshot, the goal and the feedback of its rejected steps, at temperature 0
    last = requests[-1]
    assert last["temperature"] == 0
    parts = last["messages"][-1]["content"]
    image = next(p for p in parts if p["type"] == "image_url")["image_url"]["url"]
    png = base64.b64decode(image.split(",", 1)[1])
    assert png == (d / "step_004.png").read_bytes()
    text = " ".join(p["text"] for p in parts if p["type"] == "text")
    assert card.goal[:40] in text and "rejected" in text and r2["feedback"][:30] in text
