"""``focus-eval serve --api-key-env`` as a user starts it, with the tiny Gemma 3 MLLM: the ``openai_chat`` client
given the same variable is answered, one without the token gets 401 (and is not retried), and the token appears
in nothing the server prints."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from helpers.processes import stop

pytestmark = pytest.mark.slow

SERVED = "tiny-medgemma"
TOKEN = "sk-serve-cli-5d1c0ffee0123456789"


@pytest.fixture(scope="module")
def served_with_token(tmp_path_factory):
    folder = tmp_path_factory.mktemp("serve-token")
    err = folder / "stderr.txt"
    env = {**os.environ, "SERVE_TOKEN": TOKEN}
    with open(err, "w") as errors:
        proc = subprocess.Popen([sys.executable, "-m", "focus_eval", "serve", "--model", SERVED, "--port", "0",
                                 "--device", "cpu", "--api-key-env", "SERVE_TOKEN", "--max-queue", "4",
                                 "--max-top-logprobs", "100000"],
                                stdout=subprocess.PIPE, stderr=errors, text=True, env=env)
    try:
        line = proc.stdout.readline()
        if " at http://" not in line:
            pytest.fail(f"serve did not start: {line!r} {err.read_text()[-2000:]}")
        yield line.strip().rsplit(" at ", 1)[1], proc, (line, err)
    finally:
        stop(proc)
        rest = proc.stdout.read()
        proc.stdout.close()
        assert TOKEN not in rest


def _client(base_url, key_env):
    from focus_eval.adapters import load_adapter
    from focus_eval.presets import load_preset

    return load_adapter(load_preset("openai_chat", {"base_url": base_url, "model": SERVED, "api_key_env": key_env,
                                                    "top_logprobs": 100000, "max_attempts": 3,
                                                    "backoff_seconds": 0.01}))


def test_the_client_with_the_token_is_answered_and_one_without_is_refused(served_with_token, monkeypatch):
    from focus_eval.adapters.openai_chat import FailedAnswers

    base_url, proc, (first_line, stderr) = served_with_token
    image = Image.fromarray(np.random.default_rng(0).integers(0, 255, (48, 64, 3), dtype=np.uint8))
    monkeypatch.setenv("SERVE_TOKEN", TOKEN)
    (rows,) = _client(base_url, "SERVE_TOKEN").score_and_generate_multi([image], [["Is this a fundus?"]],
                                                                          max_new_tokens=2)
    assert rows[0]["scored_by"] == "logprobs" and 0 <= rows[0]["p_yes"] <= 1
    monkeypatch.setenv("OTHER_TOKEN", "sk-not-the-right-one-0000")
    refused = _client(base_url, "OTHER_TOKEN").score_and_generate_multi([image], [["Is it?"]], max_new_tokens=2)
    assert isinstance(refused[0], FailedAnswers) and "HTTP 401" in refused[0].error
    assert "gave up" not in refused[0].error  # a 401 is not tried again
    assert "api_key_env=SERVE_TOKEN" in stderr.read_text() and TOKEN not in first_line + stderr.read_text()
