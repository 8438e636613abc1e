"""The gymnasium environment: passes gymnasium's env checker, scores like the runner, cleans up."""
from __future__ import annotations

import json

import numpy as np
import pytest

from runner.parallel import _ours, descendants, pid_alive
from tests.conftest import require_console

TASK = "ct_ui_smoke_routine"
pytestmark = pytest.mark.display


@pytest.fixture()
def env():
    require_console()
    from runner.env import MedImageOSEnv

    e = MedImageOSEnv(TASK, "dev")
    yield e
    e.close()


def _ours_alive() -> set[int]:
    """Xvfb/console processes this test process started (the session display of other tests excluded)."""
    import os

    return {p for p in descendants(os.getpid()) if _ours(p) and pid_alive(p)} - _BEFORE


_BEFORE: set[int] = set()


def test_passes_gymnasium_env_checker(env):
    from gymnasium.utils.env_checker import check_env

    check_env(env, skip_render_check=True)
    obs, info = env.reset(seed=0)
    assert obs.shape == (800, 1280, 3) and obs.dtype == np.uint8 and obs in env.observation_space
    assert info["task"] == TASK and info["seed"] == 0


def test_episode_receipts_verdict_reward_and_cleanup(env):
    from runner.agents.base import Observation
    from runner.agents.reference import ReferenceAgent
    from runner.capture import encode_png
    from runner.episode import ConsoleControlView

    _BEFORE.clear()  # processes alive before reset are not this env's
    _BEFORE.update(_ours_alive())
    obs, info = env.reset(seed=1)
    assert _ours_alive(), "reset should have started Xvfb and the console"
    obs, reward, terminated, truncated, info = env.step("press the red button please")
    r = info["receipt"]
    assert r["status"] == "rejected" and r["action"] is None and r["feedback"]
    assert (reward, terminated, truncated) == (0.0, False, False) and "verdict" not in info
    # drive the rest with the privileged reference solver through the env's own input path
    agent = ReferenceAgent()
    agent.reset(env.card, "dev", 1)
    agent.bind_control(ConsoleControlView(env._console))
    step = 1
    while not (terminated or truncated):
        text = agent.act(Observation(step, encode_png(obs), 1280, 800, env.card.goal,
                                     env.max_steps - step, []))
        obs, reward, terminated, truncated, info = env.step(text)
        assert info["receipt"]["status"] == "executed", info["receipt"]
        step += 1
    v = info["verdict"]
    assert terminated and v["outcome"] == "PASS", v["reason"]
    assert reward == v["sr"] == 1.0 and v["steps"] == step and v["rejected_steps"] == 1
    with pytest.raises(RuntimeError):
        env.step(json.dumps({"action": "done"}))
    env.close()
    env.close()  # idempotent
    assert not _ours_alive(), "close() left Xvfb or the console running"


def test_budget_truncates_and_scores(env):
    from runner.env import MedImageOSEnv

    env.close()
    short = MedImageOSEnv(TASK, "dev", max_steps=2)
    try:
        short.reset(seed=0)
        _, r1, t1, tr1, _ = short.step('{"action": "wait", "seconds": 1}')
        _, r2, t2, tr2, info = short.step('{"action": "move", "x": 5, "y": 5}')
        assert (t1, tr1, t2, tr2) == (False, False, False, True)
        assert info["verdict"]["termination"] == "budget" and info["verdict"]["outcome"] == "FAIL"
        assert r2 == 0.0
    finally:
        short.close()
