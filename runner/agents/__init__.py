"""Built-in agents, constructed by name for the CLI."""
from __future__ import annotations

from typing import Any


def make_agent(kind: str, **opts: Any):
    """reference | noop | random | api | replay. `adapter` (api only) names the agent adapter."""
    if opts.get("adapter") and kind != "api":
        raise ValueError("--adapter applies to --agent api only")
    if kind == "reference":
        from runner.agents.reference import ReferenceAgent

        return ReferenceAgent()
    if kind == "noop":
        from runner.agents.simple import NoopAgent

        return NoopAgent()
    if kind == "random":
        from runner.agents.simple import RandomAgent

        return RandomAgent(base_seed=int(opts.get("random_seed", 0)))
    if kind == "api":
        from runner.agents.adapters import VendorToolAdapter, get_adapter
        from runner.agents.api import ApiAgent
        from runner.model_cache import ModelCache

        adapter = get_adapter(opts.get("adapter") or "generic", history_k=opts.get("history_k", 3))
        if isinstance(adapter, VendorToolAdapter):  # the vendor's own tool, through its own client
            if not opts.get("model"):
                raise ValueError(f"--adapter {adapter.name} needs --model")
            cache = ModelCache(opts["cache_path"]) if opts.get("cache_path") else None
            return adapter.make_agent(opts["model"], opts.get("base_url"), max_tokens=opts.get("max_tokens") or 4096,
                                      timeout_s=opts.get("timeout_s", 60.0),
                                      max_retries=opts.get("max_retries", 4), cache=cache)
        if not opts.get("model") or not opts.get("base_url"):
            raise ValueError("--agent api needs --model and --base-url")
        cache = ModelCache(opts["cache_path"]) if opts.get("cache_path") else None
        return ApiAgent(opts["model"], opts["base_url"], temperature=opts.get("temperature", 0.0),
                        max_tokens=opts.get("max_tokens") or 512, timeout_s=opts.get("timeout_s", 60.0),
                        max_retries=opts.get("max_retries", 4), history_k=opts.get("history_k", 3),
                        cache=cache, adapter=opts.get("adapter") or "generic")
    if kind == "replay":
        from runner.agents.replay import ReplayAgent

        if not opts.get("replay_from"):
            raise ValueError("--agent replay needs --from DIR")
        return ReplayAgent(opts["replay_from"])
    raise ValueError(f"unknown agent {kind!r}; choose reference, noop, random, api or replay")
