"""The openai_chat adapter against real HTTP servers: ``focus-eval serve`` with the tiny Gemma 3 MLLM (yes/no
scores and option-letter probabilities equal to the in-process adapter's, a full evaluation run over HTTP equal
to the in-process run), and fake endpoints in this file (429 then 200 is retried, Retry-After honoured, a
server that always fails stops after the bound with the images failed and named, the API key sent but never
written)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from helpers.images import noise_images
from helpers.processes import stop

from focus_eval.adapters.openai_chat import Endpoint, FailedAnswers, RequestFailed, RetryPolicy, retry_after_seconds
from focus_eval.errors import FocusError

SERVED = "tiny-medgemma"
EXACT = {"top_logprobs": 100000}  # the serve extension: the whole vocabulary, so every variant is listed
TASKS = "funbench_l4c_dr_grading_synth_desktop,dr_synth_desktop"


_images = partial(noise_images, sizes=((64, 48), (64, 56), (64, 64)))


def _remote(base_url, **settings):
    from focus_eval.adapters import load_adapter
    from focus_eval.presets import load_preset

    return load_adapter(load_preset("openai_chat", {"base_url": base_url, "model": SERVED, **settings}))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """``focus-eval serve`` on a free port, in its own process; stopped after the module's tests."""
    log = tmp_path_factory.mktemp("serve") / "stderr.txt"
    with open(log, "w") as errors:  # a file, not a pipe nobody reads, so the server never blocks on it
        proc = subprocess.Popen([sys.executable, "-m", "focus_eval", "serve", "--model", SERVED, "--port", "0",
                                 "--device", "cpu", "--max-top-logprobs", str(EXACT["top_logprobs"])],
                                stdout=subprocess.PIPE, stderr=errors, text=True)
    try:
        line = proc.stdout.readline()  # the first line names the address once the model is loaded
        if " at http://" not in line:
            pytest.fail(f"serve did not start: {line!r} {log.read_text()[-2000:]}")
        yield line.strip().rsplit(" at ", 1)[1]
    finally:
        stop(proc)
        proc.stdout.close()


@pytest.fixture(scope="module")
def local():
    from focus_eval.adapters import load_adapter
    from focus_eval.presets import load_preset

    return load_adapter(load_preset(SERVED), "cpu")


def test_yes_no_scores_over_http_equal_the_in_process_adapter(served, local):
    remote = _remote(served, **EXACT)
    images, prompts = _images(3), [["Is there a haemorrhage?", "Is this the left eye?"], [], ["Any drusen?"]]
    here = local.score_and_generate_multi(images, prompts, max_new_tokens=3)
    there = remote.score_and_generate_multi(images, prompts, max_new_tokens=3)
    assert [len(a) for a in there] == [2, 0, 1]
    for a, b in zip(sum(here, []), sum(there, [])):
        assert b["scored_by"] == "logprobs" and b["text"] == a["text"]
        for key in ("p_yes", "p_no", "score_norm"):
            assert b[key] == pytest.approx(a[key], abs=1e-4)
    assert len({round(row["score_norm"], 5) for row in sum(there, [])}) > 1  # the rows really differ
    assert remote.provenance["server_model"] == [SERVED]
    assert remote.provenance["endpoint_host"] == served.split("//")[1].split("/")[0]


def test_option_letter_probabilities_over_http_equal_the_in_process_adapter(served, local):
    remote = _remote(served, **EXACT)
    images = _images(4, seed=3)
    prompts = [["Which grade?\nA. none\nB. mild\nC. severe", "Which eye?\nA. left eye\nB. right eye"]] * 4
    letters = [[["A", "B", "C"], ["A", "B"]]] * 4
    here = local.score_options_and_generate_multi(images, prompts, letters, max_new_tokens=3)
    there = remote.score_options_and_generate_multi(images, prompts, letters, max_new_tokens=3)
    for a, b in zip(sum(here, []), sum(there, [])):
        assert b["scored_by"] == "logprobs" and b["letters"].keys() == a["letters"].keys()
        assert all(b["letters"][k] == pytest.approx(a["letters"][k], abs=1e-4) for k in a["letters"])
        assert b["letter_mass"] == pytest.approx(a["letter_mass"], abs=1e-4)
    # with only OpenAI's 20 top tokens, letters outside them count 0 and the rest is renormalised
    short = _remote(served, top_logprobs=20).score_options_and_generate_multi(images[:1], prompts[:1],
                                                                               letters[:1], max_new_tokens=1)[0]
    assert all(sum(row["letters"].values()) == pytest.approx(1.0) for row in short)


def test_text_only_questions_over_http_equal_the_in_process_adapter(served, local):
    remote = _remote(served, **EXACT)
    prompts = ["A fundus with microaneurysms only.\nWhich grade?\nA. none\nB. mild\nC. severe",
               "Which eye?\nA. left eye\nB. right eye"]
    letters = [["A", "B", "C"], ["A", "B"]]
    here = local.score_options_and_generate_text(prompts, letters, max_new_tokens=3)
    there = remote.score_options_and_generate_text(prompts, letters, max_new_tokens=3)
    for a, b in zip(here, there):
        assert b["scored_by"] == "logprobs" and b["text"] == a["text"]
        assert all(b["letters"][k] == pytest.approx(a["letters"][k], abs=1e-4) for k in a["letters"])


def _post(url, body):
    from urllib import error, request

    req = request.Request(url + "/chat/completions", data=json.dumps(body).encode(), method="POST",
                          headers={"Content-Type": "application/json"})
    try:
        with request.urlopen(req, timeout=120) as response:
            return response.status, json.loads(response.read())
    except error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_serve_speaks_the_chat_completions_format_and_refuses_what_it_cannot_honour(served):
    from urllib import request

    from focus_eval.adapters.openai_chat import image_data_url

    with request.urlopen(served + "/models", timeout=30) as response:
        assert [m["id"] for m in json.loads(response.read())["data"]] == [SERVED]
    turn = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": image_data_url(_images(1)[0])}},
                                         {"type": "text", "text": "Is this a fundus?"}]}]
    status, body = _post(served, {"model": SERVED, "messages": turn, "max_tokens": 2, "logprobs": True,
                                  "top_logprobs": 25})
    assert status == 200 and body["object"] == "chat.completion" and body["model"] == SERVED
    first = body["choices"][0]["logprobs"]["content"][0]
    assert len(first["top_logprobs"]) == 25 and first["token"] == first["top_logprobs"][0]["token"]
    assert [t["logprob"] for t in first["top_logprobs"]] == sorted((t["logprob"] for t in first["top_logprobs"]),
                                                                   reverse=True)
    status, body = _post(served, {"model": SERVED, "messages": turn, "max_tokens": 2})
    assert status == 200 and body["choices"][0]["logprobs"] is None
    assert _post(served, {"model": SERVED, "messages": turn, "temperature": 0.7})[0] == 400
    assert _post(served, {"model": "gpt-4o", "messages": turn})[0] == 404
    assert _post(served, {"model": SERVED, "messages": [turn[0], turn[0]]})[0] == 400
    no_image = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x/y.png"}}]}]
    status, body = _post(served, {"model": SERVED, "messages": no_image})
    assert status == 400 and "data URL" in body["error"]["message"]


def _run(args):
    from focus_eval.cli import main

    return main([*args, "--n-boot", "10", "--no-progress", "--num-workers", "0", "--batch-size", "4"])


def _preset_file(folder: Path, name: str, base_url: str, **settings) -> Path:
    import yaml

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    # decoded at the served preset's size, as the in-process run decodes them, so both send the same pixels
    path.write_text(yaml.safe_dump({"name": name, "family": "mllm", "domain": "medical", "adapter": "openai_chat",
                                    "methods": ["prompt"], "preprocessing": {"size": 64},
                                    "settings": {"base_url": base_url, "model": SERVED, **settings}}))
    return path


@pytest.mark.slow
def test_a_full_run_over_http_equals_the_in_process_run(served, tmp_path):
    from focus_eval.results.schema import read_jsonl
    from focus_eval.synth.datasets import write_synthetic

    write_synthetic(tmp_path / "data", n=30, seed=2)
    common = ["--data-root", str(tmp_path / "data"), "--output-path", str(tmp_path / "out")]
    # the text-only questions of E-mode II too (the label's description, no image)
    knowledge = ["--tasks", "funbench_l4c_dr_grading_synth_desktop", "--methods", "knowledge_prompt"]
    preset = _preset_file(tmp_path / "presets", "served-tiny", served, max_new_tokens=5, **EXACT)
    for model in (str(preset), SERVED):
        assert _run(["--model", model, "--tasks", TASKS, *common]) == 0
        assert _run(["--model", model, *knowledge, *common]) == 0
    for task, method in (("funbench_l4c_dr_grading_synth_desktop", "multiple_choice"), ("dr_synth_desktop", "prompt"),
                         ("funbench_l4c_dr_grading_synth_desktop", "knowledge_prompt")):
        there = read_jsonl(tmp_path / "out" / "served-tiny" / "samples" / f"{task}.{method}.jsonl")
        here = read_jsonl(tmp_path / "out" / SERVED / "samples" / f"{task}.{method}.jsonl")
        assert [s["image_id"] for s in there] == [s["image_id"] for s in here] and here
        for a, b in zip(here, there):
            assert b["error"] is None and b["text"] == a["text"] and b["pred"] == a["pred"]
            if method == "prompt":
                assert b["p_yes"] == pytest.approx(a["p_yes"], abs=1e-4)
            else:
                assert b["probs"] == pytest.approx(a["probs"], abs=1e-4)
    lines = read_jsonl(tmp_path / "out" / "served-tiny" / "results.jsonl")
    provenance = [line["extra"]["provenance"] for line in lines if line.get("kind") != "group"]
    assert len(provenance) == 3 and all(p["server_model"] == [SERVED] and p["api_model"] == SERVED
                                        and p["adapter"] == "openai_chat" for p in provenance)


# ----- fake endpoints: retries, bounds, failures


class FakeAPI(ThreadingHTTPServer):
    """Answers each POST with the next status of ``script`` (the last one repeats); 200 is a chat completion
    whose first token is "Yes" with a known top list. Records every request's headers."""

    daemon_threads = True

    def __init__(self, script, retry_after=None):
        self.script, self.retry_after, self.seen, self.lock = list(script), retry_after, [], threading.Lock()
        super().__init__(("127.0.0.1", 0), _FakeHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def next_status(self, headers) -> int:
        with self.lock:
            self.seen.append(dict(headers))
            return self.script[min(len(self.seen), len(self.script)) - 1]


class _FakeHandler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status = self.server.next_status(self.headers)
        if status == 200:
            top = [{"token": "Yes", "logprob": -0.2}, {"token": " No", "logprob": -1.8}, {"token": "A", "logprob": -4}]
            body = {"model": "fake-4o-2024", "choices": [{"index": 0, "message": {"role": "assistant", "content": "Yes"},
                                                          "logprobs": {"content": [{"token": "Yes", "logprob": -0.2,
                                                                                    "top_logprobs": top}]}}]}
        else:
            body = {"error": {"message": f"scripted {status}", "type": "x"}}
        data = json.dumps(body).encode()
        self.send_response(status)
        if status == 429 and self.server.retry_after is not None:
            self.send_header("Retry-After", str(self.server.retry_after))
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def fake():
    servers = []

    def start(script, retry_after=None):
        servers.append(FakeAPI(script, retry_after))
        return servers[-1]

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_rate_limited_twice_then_answered_is_retried(fake, monkeypatch):
    api = fake([429, 429, 200], retry_after=0)
    monkeypatch.setenv("FAKE_KEY_ENV", "sk-test-secret")
    remote = _remote(api.url, api_key_env="FAKE_KEY_ENV", backoff_seconds=0.01)
    (rows,) = remote.score_and_generate_multi(_images(1), [["Is it?"]])
    assert len(api.seen) == 3 and rows[0]["scored_by"] == "logprobs" and rows[0]["text"] == "Yes"
    assert rows[0]["p_yes"] == pytest.approx(np.exp(-0.2)) and rows[0]["p_no"] == pytest.approx(np.exp(-1.8))
    assert rows[0]["score_norm"] == pytest.approx(np.exp(-0.2) / (np.exp(-0.2) + np.exp(-1.8)))
    assert api.seen[0]["Authorization"] == "Bearer sk-test-secret"
    assert remote.provenance["server_model"] == ["fake-4o-2024"]
    assert "sk-test-secret" not in json.dumps(remote.describe())
    with pytest.raises(FocusError, match="holds credentials"):
        _remote(api.url.replace("//", "//user:sk-in-url@"))
    with pytest.raises(FocusError, match="needs --model-args base_url=.*,model=NAME"):
        _remote(api.url, model="")


def test_retry_after_is_honoured_and_backoff_grows_with_jitter(fake):
    api = fake([429, 200], retry_after=7)
    waits = []
    endpoint = Endpoint(api.url, None, 10.0, RetryPolicy(5, 60.0, 1.0), sleep=waits.append)
    assert endpoint.post("/chat/completions", {})["model"] == "fake-4o-2024" and waits == [7.0]
    policy = RetryPolicy(10, 1000.0, 1.0)
    for attempt in range(5):
        delays = {policy.delay(attempt, None) for _ in range(20)}
        assert all(2 ** attempt / 2 <= d <= 2 ** attempt for d in delays) and len(delays) > 1
    assert retry_after_seconds("3") == 3.0 and retry_after_seconds(None) is None
    assert 0 <= retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") < 1  # a date in the past: now


def test_a_server_that_always_fails_stops_after_the_bound(fake):
    api = fake([503])
    waits = []
    endpoint = Endpoint(api.url, None, 10.0, RetryPolicy(3, 60.0, 0.01), sleep=waits.append)
    with pytest.raises(RequestFailed, match=r"HTTP 503 \(scripted 503\) \(gave up after 3 tries"):
        endpoint.post("/chat/completions", {})
    assert len(api.seen) == 3 and len(waits) == 2
    # the time bound stops it before the attempts run out: a clock that jumps 40 s per try, 60 s allowed
    ticks = iter(range(0, 10000, 40))
    timed = Endpoint(api.url, None, 10.0, RetryPolicy(100, 60.0, 0.01), sleep=lambda s: None,
                     clock=lambda: float(next(ticks)))
    with pytest.raises(RequestFailed, match="gave up after 2 tries"):
        timed.post("/chat/completions", {})
    refused = fake([400])
    with pytest.raises(RequestFailed, match="HTTP 400"):
        Endpoint(refused.url, None, 10.0, RetryPolicy(5, 60.0, 0.01), sleep=waits.append).post("/x", {})
    assert len(refused.seen) == 1  # a request the server refuses is not sent again


def test_images_whose_requests_fail_are_failed_with_the_reason_and_the_run_goes_on(fake, tmp_path, monkeypatch):
    from focus_eval.results.schema import read_jsonl
    from focus_eval.synth.datasets import write_synthetic

    api = fake([500])
    remote = _remote(api.url, max_attempts=2, backoff_seconds=0.01)
    answers = remote.score_and_generate_multi(_images(2), [["Is it?", "And this?"], []])
    assert isinstance(answers[0], FailedAnswers) and "HTTP 500" in answers[0].error and answers[1] == []
    assert "gave up after 2 tries" in answers[0].error and remote.provenance["rows_scored_by"]["failed"] == 2
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-written")
    write_synthetic(tmp_path / "data", n=20, seed=1)
    # a permanent failure (the server refuses the request) finishes the unit; a transient one leaves it to retry
    # (tests/adapters/test_openai_client_hostile.py)
    refused = fake([400])
    preset = _preset_file(tmp_path / "presets", "always-down", refused.url, max_attempts=2, backoff_seconds=0.01)
    code = _run(["--model", str(preset), "--tasks", "dr_synth_desktop", "--data-root", str(tmp_path / "data"),
                 "--output-path", str(tmp_path / "out"), "--limit", "3"])
    assert code == 1  # every image failed: the run finishes and says so
    samples = read_jsonl(next((tmp_path / "out").rglob("dr_synth_desktop.prompt.jsonl")))
    assert [s["split"] for s in samples if s["split"] == "test"] == ["test"] * 3  # --limit 3: three test images
    assert all("HTTP 400" in s["error"] and s["score"] is None for s in samples)  # validation rows failed too
    written = [p.read_text(errors="ignore") for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert written and not any("sk-never-written" in text for text in written)
    assert os.environ["OPENAI_API_KEY"] == "sk-never-written"


@pytest.mark.parametrize("args, named", [({"batch_size": "x"}, "settings.batch_size"),
                                         ({"top_logprobs": -1}, "settings.top_logprobs"),
                                         ({"timeout": 0}, "settings.timeout"), ({"logprobs": "yes"}, "logprobs"),
                                         ({"base_url": "ftp://host/v1"}, "settings.base_url"),
                                         ({"colour": 1}, "unknown setting colour")])
def test_the_gpt4o_preset_and_its_settings_are_checked_before_any_request(args, named):
    from focus_eval.adapters import load_adapter
    from focus_eval.presets import load_preset

    preset = load_preset("gpt-4o")
    assert preset.settings["model"] == "gpt-4o-2024-08-06" and preset.adapter == "openai_chat"
    with pytest.raises(FocusError, match=named):
        load_adapter(load_preset("gpt-4o", args))
