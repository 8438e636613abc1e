"""ApiAgent through the real `openai` client against the local fake OpenAI-compatible server."""
from __future__ import annotations

import base64
import json
import pickle
import socket
import struct
import zlib

import pytest

from runner.agents.api import ApiAgent
from runner.agents.endpoint import is_local_url
from runner.agents.base import AgentFault, Observation, StepRecord
from runner.agents.prompt import system_prompt, user_message
from runner.model_cache import ModelCache
from tasks.card import TaskCard

try:
    from tests.runner.fake_openai_server import (
        Reply, error, fake_openai, rate_limit, server_error, slow, unauthorized)
except ImportError:  # tests/ not importable as a package: pytest put this folder on sys.path
    from fake_openai_server import (
        Reply, error, fake_openai, rate_limit, server_error, slow, unauthorized)

GOAL = "Acquire a scout, set the scan range over the chest, then scan."
CLICK = '{"action": "click", "x": 10, "y": 20, "button": "left"}'


def tiny_png(shade: int = 0, w: int = 4, h: int = 3) -> bytes:
    """A valid grayscale PNG, different bytes for different shades."""
    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))
    rows = b"".join(b"\x00" + bytes([shade]) * w for _ in range(h))
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def make_card(**action_profile) -> TaskCard:
    data = {"id": "t_api", "version": "1", "modality": "ct", "level": 0, "title": "API test",
            "goal": GOAL, "budgets": {"max_steps": 10}, "oracle": "ct_smoke"}
    if action_profile:
        data["action_profile"] = action_profile
    return TaskCard.model_validate(data)


def make_obs(step: int = 0, png: bytes | None = None, history=None) -> Observation:
    return Observation(step=step, screenshot_png=png if png is not None else tiny_png(),
                       width=1280, height=800, goal=GOAL, steps_left=10 - step,
                       history=list(history or []))


class Sleeps(list):
    """Recording no-op sleep."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def make_agent(server_or_url, *, cache=None, sleeps=None, card=None, **kw) -> ApiAgent:
    url = server_or_url if isinstance(server_or_url, str) else server_or_url.base_url
    kw.setdefault("timeout_s", 2.0)
    agent = ApiAgent("fake-model", url, api_key="sk-test", cache=cache,
                     sleep=sleeps if sleeps is not None else Sleeps(), **kw)
    agent.reset(card or make_card(), "dev", 0)
    return agent


# -- success and what is sent ------------------------------------------------------------------

def test_success_sends_system_prompt_image_and_temperature_zero():
    png = tiny_png(7)
    with fake_openai([CLICK]) as server:
        agent = make_agent(server)
        assert agent.act(make_obs(png=png)) == CLICK
    assert agent.name == "api:fake-model"
    assert len(server.requests) == 1
    body = server.requests[0]
    assert body["model"] == "fake-model"
    assert body["temperature"] == 0
    assert body["max_tokens"] == 512
    assert "seed" not in body and "top_p" not in body
    system, user = body["messages"]
    assert system["role"] == "system"
    assert "1280x800" in system["content"] and '"action": "click"' in system["content"]
    assert "origin (0, 0) is the top-left" in system["content"]
    assert user["role"] == "user"
    text_part, image_part = user["content"]
    assert text_part["type"] == "text" and GOAL in text_part["text"] and "Steps left: 10" in text_part["text"]
    assert image_part["type"] == "image_url"
    url = image_part["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == png
    assert server.request_headers[0]["authorization"] == "Bearer sk-test"
    info = agent.last_call_info
    assert info["attempts"] == 1 and info["cache_hit"] is False and info["errors"] == []
    assert info["tokens"] == {"prompt": 100, "completion": 10, "total": 110}
    assert info["finish_reason"] == "stop" and info["latency_s"] >= 0
    json.dumps(info)  # receipts need it serializable


def test_malformed_reply_is_returned_raw():
    raw = "Sure! I will click the Scan button.\n```json\n{action: click x=5}\n```"
    with fake_openai([raw]) as server:
        agent = make_agent(server)
        assert agent.act(make_obs()) == raw


def test_empty_content_is_returned_as_empty_string():
    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "length",
                         "message": {"role": "assistant", "content": None}}]}
    with fake_openai([Reply(body=body)]) as server:
        agent = make_agent(server)
        assert agent.act(make_obs()) == ""
    assert agent.last_call_info["finish_reason"] == "length" and agent.last_call_info["tokens"] is None


def test_history_shows_last_k_steps_with_status_and_feedback():
    history = [StepRecord(step=i, raw=f"raw{i}", action={"action": "wait", "seconds": i} if i % 2 else None,
                          status="executed" if i % 2 else "rejected", feedback=f"feedback-{i}")
               for i in range(5)]
    with fake_openai([CLICK]) as server:
        agent = make_agent(server, history_k=3)
        agent.act(make_obs(step=5, history=history))
    text = server.requests[0]["messages"][1]["content"][0]["text"]
    for i in (0, 1):
        assert f"feedback-{i}" not in text
    assert "step 2: \"raw2\" -> rejected. Feedback: feedback-2" in text
    assert 'step 3: {"action": "wait", "seconds": 3} -> executed. Feedback: feedback-3' in text
    assert "feedback-4" in text and "Steps left: 5" in text


def test_system_prompt_lists_only_allowed_actions_and_keys():
    card = make_card(allowed_actions=["click", "key", "done"], allowed_keys=["Enter", "ctrl+a"])
    prompt = system_prompt(card, 1024, 768)
    assert "1024x768" in prompt and "0 to 1023" in prompt and "0 to 767" in prompt
    assert '"action": "click"' in prompt and '"action": "done"' in prompt
    assert '"action": "drag"' not in prompt and '"action": "type"' not in prompt
    assert "Only these are allowed: Enter, ctrl+a." in prompt
    assert "simulated time" in prompt and "nothing else" in prompt
    parts = user_message(make_obs(), k_history=0)
    assert [p["type"] for p in parts] == ["text", "image_url"] and "No previous steps." in parts[0]["text"]


# -- retries and faults ------------------------------------------------------------------------

def test_rate_limit_then_success_retries_with_backoff():
    sleeps = Sleeps()
    with fake_openai([rate_limit(retry_after=3), CLICK]) as server:
        agent = make_agent(server, sleeps=sleeps)
        assert agent.act(make_obs()) == CLICK
    assert len(server.requests) == 2
    assert sleeps == [3.0]  # the server's Retry-After exceeds the first backoff (1 s)
    info = agent.last_call_info
    assert info["attempts"] == 2 and info["backoff_s"] == [3.0]
    assert "RateLimitError (HTTP 429)" in info["errors"][0]


def test_server_errors_back_off_exponentially_then_succeed():
    sleeps = Sleeps()
    with fake_openai([server_error(500), server_error(502), rate_limit(None), CLICK]) as server:
        agent = make_agent(server, sleeps=sleeps)
        assert agent.act(make_obs()) == CLICK
    assert sleeps == [1.0, 2.0, 4.0]
    assert agent.last_call_info["attempts"] == 4


def test_timeout_then_success():
    sleeps = Sleeps()
    # the client's timeout (2 s, the default here) cuts the first request; the second reply is prompt.
    # (0.3 s used to be the timeout: one slow reply of the loaded machine to the second request broke it.)
    with fake_openai([slow(60.0), CLICK]) as server:
        agent = make_agent(server, sleeps=sleeps)
        assert agent.act(make_obs()) == CLICK
    assert len(server.requests) == 2
    assert sleeps == [1.0]
    assert "APITimeoutError" in agent.last_call_info["errors"][0]


def test_persistent_500_raises_agent_fault_after_all_retries():
    sleeps = Sleeps()
    with fake_openai(default=server_error(500)) as server:
        agent = make_agent(server, sleeps=sleeps, max_retries=3)
        with pytest.raises(AgentFault, match=r"still failing after 4 attempts.*HTTP 500"):
            agent.act(make_obs())
    assert len(server.requests) == 4
    assert sleeps == [1.0, 2.0, 4.0]
    assert agent.last_call_info["attempts"] == 4 and len(agent.last_call_info["errors"]) == 4


def test_backoff_is_capped():
    sleeps = Sleeps()
    with fake_openai(default=server_error(503)) as server:
        agent = make_agent(server, sleeps=sleeps, max_retries=6, backoff_max_s=5.0)
        with pytest.raises(AgentFault):
            agent.act(make_obs())
    assert sleeps == [1.0, 2.0, 4.0, 5.0, 5.0, 5.0]


@pytest.mark.parametrize("reply, status", [(unauthorized(), 401), (error(400, "bad request"), 400),
                                           (error(404, "model not found"), 404)])
def test_client_errors_fail_fast_without_retries(reply, status):
    sleeps = Sleeps()
    with fake_openai([reply, CLICK]) as server:
        agent = make_agent(server, sleeps=sleeps)
        with pytest.raises(AgentFault, match=rf"non-retryable error.*HTTP {status}"):
            agent.act(make_obs())
    assert len(server.requests) == 1 and sleeps == []
    assert agent.last_call_info["attempts"] == 1


def test_unreachable_endpoint_raises_agent_fault():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sleeps = Sleeps()
    agent = make_agent(f"http://127.0.0.1:{port}/v1", sleeps=sleeps, max_retries=2)
    with pytest.raises(AgentFault, match="after 3 attempts.*APIConnectionError"):
        agent.act(make_obs())
    assert sleeps == [1.0, 2.0]


# -- cache -------------------------------------------------------------------------------------

def test_cache_hit_on_identical_call_makes_no_request(tmp_path):
    path = tmp_path / "cache.jsonl"
    with fake_openai([CLICK]) as server:
        first = make_agent(server, cache=ModelCache(path))
        assert first.act(make_obs()) == CLICK
        # a resumed run: new agent, cache reloaded from disk
        second = make_agent(server, cache=ModelCache(path))
        assert second.act(make_obs()) == CLICK
    assert len(server.requests) == 1
    assert second.last_call_info["cache_hit"] is True and second.last_call_info["attempts"] == 0
    assert second.last_call_info["tokens"] == first.last_call_info["tokens"]
    assert second.last_call_info["cache_key"] == first.last_call_info["cache_key"]


def test_cache_key_changes_with_temperature_model_image_and_settings(tmp_path):
    cache = ModelCache(tmp_path / "cache.jsonl")
    with fake_openai(default=CLICK) as server:
        def run(png_shade=0, model="fake-model", **kw):
            agent = ApiAgent(model, server.base_url, api_key="k", cache=cache, sleep=Sleeps(), timeout_s=2, **kw)
            agent.reset(make_card(), "dev", 0)
            agent.act(make_obs(png=tiny_png(png_shade)))
            return agent.last_call_info["cache_hit"]

        assert run() is False
        assert run() is True
        assert run(temperature=0.7) is False
        assert run(model="other-model") is False
        assert run(png_shade=9) is False
        assert run(max_tokens=256) is False
        assert run(seed=1) is False
        assert run(top_p=0.9) is False
        assert run(extra_body={"top_k": 20}) is False
        assert run(history_k=3) is True  # no history yet: identical request
    assert len(server.requests) == 8


def test_sampling_keys_are_scoped_to_the_episode(tmp_path):
    cache = ModelCache(tmp_path / "cache.jsonl")
    with fake_openai(default=CLICK) as server:
        agent = make_agent(server, cache=cache, temperature=0.7)
        agent.act(make_obs())
        agent.reset(make_card(), "dev", 1)  # another episode, same screen: independent sample
        agent.act(make_obs())
        agent.reset(make_card(), "dev", 0)  # the first episode again (resume): replayed
        agent.act(make_obs())
    assert len(server.requests) == 2 and agent.last_call_info["cache_hit"] is True


def test_faults_are_not_cached(tmp_path):
    cache = ModelCache(tmp_path / "cache.jsonl")
    with fake_openai([unauthorized(), CLICK]) as server:
        agent = make_agent(server, cache=cache)
        with pytest.raises(AgentFault):
            agent.act(make_obs())
        assert agent.act(make_obs()) == CLICK
    assert len(cache) == 1


# -- construction ------------------------------------------------------------------------------

def test_api_key_resolution(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with fake_openai([CLICK, CLICK]) as server:
        local = ApiAgent("m", server.base_url, sleep=Sleeps())
        local.reset(make_card(), "dev", 0)
        local.act(make_obs())
        monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
        env = ApiAgent("m", server.base_url, sleep=Sleeps())
        env.reset(make_card(), "dev", 0)
        env.act(make_obs())
    assert server.request_headers[0]["authorization"] == "Bearer EMPTY"
    assert server.request_headers[1]["authorization"] == "Bearer sk-env"
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        ApiAgent("m", "https://api.example.com/v1")
    assert is_local_url("http://localhost:8000/v1") and not is_local_url("https://api.example.com/v1")


def test_act_before_reset_is_an_error():
    agent = ApiAgent("m", "http://127.0.0.1:9/v1", api_key="k")
    with pytest.raises(RuntimeError, match="reset"):
        agent.act(make_obs())


def test_agent_pickles_without_its_http_client(tmp_path):
    with fake_openai([CLICK, CLICK]) as server:
        agent = make_agent(server, cache=ModelCache(tmp_path / "c.jsonl"))
        agent.act(make_obs(step=0))
        clone = pickle.loads(pickle.dumps(agent))
        assert clone.act(make_obs(step=1)) == CLICK
    assert len(server.requests) == 2
