"""The crash-safe model response cache and its request key."""
from __future__ import annotations

import base64
import json
import multiprocessing
import pickle

import pytest

from runner.model_cache import ModelCache, request_key


def data_url(payload: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(payload).decode()


def base_request(**overrides):
    req = {
        "base_url": "http://127.0.0.1:8000/v1",
        "request": {
            "model": "m",
            "messages": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": [{"type": "text", "text": "goal"},
                                             {"type": "image_url", "image_url": {"url": data_url(b"png-a")}}]},
            ],
            "temperature": 0.0,
            "max_tokens": 512,
        },
        "extra_body": None,
    }
    req["request"].update(overrides)
    return req


def test_put_get_roundtrip_across_instances(tmp_path):
    path = tmp_path / "sub" / "cache.jsonl"
    cache = ModelCache(path)
    assert cache.get("k1") is None
    cache.put("k1", {"text": "a"})
    cache.put("k2", {"text": "b"})
    cache.put("k1", {"text": "ignored"})  # first record of a key wins
    cache.close()
    again = ModelCache(path)
    assert again.get("k1") == {"text": "a"} and again.get("k2") == {"text": "b"} and len(again) == 2
    assert "k1" in again and "nope" not in again
    assert len(path.read_text().splitlines()) == 2


def test_torn_last_line_is_skipped_and_the_next_record_survives(tmp_path):
    path = tmp_path / "cache.jsonl"
    with ModelCache(path) as cache:
        cache.put("good", {"text": "ok"})
    with open(path, "ab") as f:
        f.write(b'{"key": "torn", "value": {"te')  # a writer killed mid-record
    cache = ModelCache(path)
    assert cache.get("good") == {"text": "ok"} and cache.get("torn") is None and len(cache) == 1
    cache.put("after", {"text": "later"})
    cache.close()
    reloaded = ModelCache(path)
    assert reloaded.get("after") == {"text": "later"} and reloaded.get("good") == {"text": "ok"}
    assert reloaded.get("torn") is None and reloaded.skipped_lines == 1


def test_corrupt_middle_line_is_skipped(tmp_path):
    path = tmp_path / "cache.jsonl"
    path.write_text('{"key":"a","value":1}\nnot json\n{"value":2}\n\n{"key":"b","value":3}\n')
    cache = ModelCache(path)
    assert cache.get("a") == 1 and cache.get("b") == 3 and len(cache) == 2 and cache.skipped_lines == 2


def test_miss_sees_records_appended_by_another_writer(tmp_path):
    path = tmp_path / "cache.jsonl"
    reader, writer = ModelCache(path), ModelCache(path)
    assert reader.get("x") is None
    writer.put("x", {"text": "from elsewhere"})
    assert reader.get("x") == {"text": "from elsewhere"}


def _append_many(path: str, worker: int, n: int) -> None:
    cache = ModelCache(path)
    for i in range(n):
        cache.put(f"w{worker}-{i}", {"text": "x" * 2000, "worker": worker, "i": i})
    cache.close()


def test_several_processes_append_without_corruption(tmp_path):
    path = tmp_path / "cache.jsonl"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_append_many, args=(str(path), w, 25)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    cache = ModelCache(path)
    assert len(cache) == 100 and cache.skipped_lines == 0
    for line in path.read_text().splitlines():
        json.loads(line)


def test_non_json_value_is_refused_without_writing(tmp_path):
    path = tmp_path / "cache.jsonl"
    cache = ModelCache(path)
    with pytest.raises(TypeError):
        cache.put("k", {"bad": object()})
    assert not path.exists() or path.read_bytes() == b""


def test_cache_pickles_as_its_path(tmp_path):
    cache = ModelCache(tmp_path / "c.jsonl")
    cache.put("k", 1)
    clone = pickle.loads(pickle.dumps(cache))
    assert clone.get("k") == 1


def test_request_key_covers_model_settings_and_image_bytes():
    k = request_key(base_request())
    assert len(k) == 64 and k == request_key(base_request())
    assert request_key(base_request(temperature=0.5)) != k
    assert request_key(base_request(model="m2")) != k
    assert request_key(base_request(max_tokens=100)) != k
    assert request_key(base_request(top_p=0.9)) != k
    assert request_key(base_request(seed=3)) != k
    other_image = base_request()
    other_image["request"]["messages"][1]["content"][1]["image_url"]["url"] = data_url(b"png-b")
    assert request_key(other_image) != k
    other_url = base_request()
    other_url["base_url"] = "http://127.0.0.1:8001/v1"
    assert request_key(other_url) != k
    other_system = base_request()
    other_system["request"]["messages"][0]["content"] = "sys2"
    assert request_key(other_system) != k
    extra = base_request()
    extra["extra_body"] = {"top_k": 5}
    assert request_key(extra) != k


def test_request_key_ignores_dict_order():
    req = base_request()
    reordered = {"extra_body": None, "request": dict(reversed(list(req["request"].items()))),
                 "base_url": req["base_url"]}
    assert request_key(reordered) == request_key(req)
