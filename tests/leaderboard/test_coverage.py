"""Coverage is part of every prompt score: a multimodal LLM whose answers cannot be read gets coverage 0, its
unread answers count as misses, and it is ranked nowhere (task page, FunBench page, module attribution), while a
model that answered stays ranked; the floor is an option."""

from __future__ import annotations

import json
import re

import pytest

from focus_eval.cli import main

TASK = "funbench_l2b_laterality_synth_desktop"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """tiny-qwen-vl answering every question with text nothing can be read from (its real scorer, the answer
    text replaced); its samples scored as a trained model ``mumbler`` (tiny models are untrained, and untrained
    lines are never ranked anyway), and as ``reader`` with every answer the truth, through the same path."""
    from focus_eval.results.schema import read_jsonl
    from focus_eval.results.store import read_meta, upsert_line
    from focus_eval.runner.methods.multiple_choice import MultipleChoice
    from focus_eval.scoring import evaluate_samples
    from focus_eval.synth.datasets import write_synthetic

    tmp = tmp_path_factory.mktemp("coverage")
    write_synthetic(tmp / "data", n=40, seed=2)
    raw, out = tmp / "raw", tmp / "out"
    real = MultipleChoice.asker

    def mumbling(self, adapter):
        ask = real(self, adapter)

        def answers(images, asked):
            found = ask(images, asked)
            for per_image in found:
                for answer in per_image:
                    answer["text"] = "?!"
            return found
        return answers

    patch = pytest.MonkeyPatch()
    patch.setattr(MultipleChoice, "asker", mumbling)
    try:
        assert main(["--model", "tiny-qwen-vl", "--methods", "multiple_choice", "--tasks", TASK, "--data-root",
                     str(tmp / "data"), "--output-path", str(raw), "--cache-dir", str(tmp / "cache"), "--n-boot",
                     "20", "--no-progress", "--num-workers", "0", "--batch-size", "4"]) == 0
    finally:
        patch.undo()
    meta_path = next((raw / "tiny-qwen-vl" / "samples").glob("*.multiple_choice.meta.json"))
    meta = {**read_meta(meta_path).to_dict(), "untrained": False}
    samples = read_jsonl(meta_path.parent / f"{TASK}.multiple_choice.jsonl")
    upsert_line(out / "mumbler", evaluate_samples(samples, {**meta, "model": "mumbler"}))
    for s in samples:
        s.update(pred=s["label"], parsed=True, text=s["answer"], decided_by="letter")
    upsert_line(out / "reader", evaluate_samples(samples, {**meta, "model": "reader"}))
    return tmp, out


def lines(out, model):
    return [r for r in (json.loads(x) for x in (out / model / "results.jsonl").read_text().splitlines())
            if r.get("kind") != "group"]


def test_unreadable_answers_give_coverage_zero_and_count_as_misses(runs):
    _, out = runs
    (raw,) = lines(out.parent / "raw", "tiny-qwen-vl")
    assert raw["n_answered"] == 0 and raw["coverage"] == 0.0
    (line,) = lines(out, "mumbler")
    assert line["n_answered"] == 0 and line["coverage"] == 0.0 and line["n_unparsed"] == line["n"] > 0
    assert line["metrics"]["funbench_f1"] == 0.0 and line["metrics"]["accuracy"] == 0.0
    (good,) = lines(out, "reader")
    assert good["coverage"] == 1.0 and good["metrics"]["funbench_f1"] == 1.0


def test_no_score_and_no_rank_in_the_report_without_answers(runs, capsys):
    tmp, out = runs
    report_path = tmp / "r.json"
    assert main(["report", "funbench", str(out), "--json", str(report_path), "--n-boot", "0"]) == 0
    report = json.loads(report_path.read_text())
    holistic = {s["model"]: s for s in report["other_datasets"]["summaries"]["holistic"]}
    assert "mumbler" not in holistic and holistic["reader"]["rank"] == 1  # no score, so no row and no rank
    assert any("no answers" in n and "mumbler" in n for n in report["notes"])
    assert "mumbler" in capsys.readouterr().out.split("notes:")[1]
    # the floor is an option, but a line without a single answer has no score at any floor
    assert main(["report", "funbench", str(out), "--json", str(report_path), "--n-boot", "0",
                 "--coverage-floor", "0"]) == 0
    holistic = {s["model"]: s for s in json.loads(report_path.read_text())["other_datasets"]["summaries"]["holistic"]}
    assert "mumbler" not in holistic and holistic["reader"]["rank"] == 1


def test_no_rank_on_any_page_for_low_coverage(runs):
    from focus_eval.leaderboard import build_site

    tmp, out = runs
    site = tmp / "site"
    build_site([out], site)
    task_page = (site / "tasks" / f"{TASK}.html").read_text()
    assert "Ranked by FunBench F1" in task_page and "Ranked by AUROC" not in task_page
    rows = {m: re.search(rf'<tr class="[^"]*"[^>]*>\s*<th[^>]*><span class="rank"([^>]*)>([^<]*)</span> <a[^>]*>{m}<',
                         task_page) for m in ("mumbler", "reader")}
    assert rows["reader"].group(2) == "1"
    assert rows["mumbler"].group(2) == "\u2014" and "no answers" in rows["mumbler"].group(1)
    assert "badge-no_answers" in task_page and "0 of " in task_page
    funbench = (site / "funbench.html").read_text()
    attribution = funbench.split('id="funbench-attribution-other"')[1].split("</table>")[0]
    assert "mumbler" not in attribution  # no answers: no score and no rank
    assert re.search(r'<tr><th[^>]*>reader</th>.*?data-value="1.0">1<', attribution, re.S)
    rebuilt = tmp / "site0"
    build_site([out], rebuilt, coverage_floor=0.0)
    assert "badge-low_coverage" not in (rebuilt / "funbench.html").read_text()


def test_a_binary_prompt_line_below_the_floor_is_listed_but_not_ranked(tmp_path):
    from focus_eval.leaderboard import build_site
    from helpers.leaderboard_data import line, write_lines

    results = tmp_path / "results"
    for model, auroc, coverage in (("talker", 0.7, 0.95), ("mute", 0.9, 0.1)):
        rows = [line(model=model, family="mllm", method="prompt", task=task, dataset=task[3:], metrics={"auroc": auroc},
                     n_answered=round(100 * coverage), coverage=coverage) for task in ("dr_a", "dr_b")]
        write_lines(results / model / "results.jsonl", rows)
    build_site([results], tmp_path / "site", no_samples=True)
    index = (tmp_path / "site" / "index.html").read_text()
    main = index.split('id="main-table"')[1].split("</table>")[0]
    assert "talker" in main and "coverage 0.950" in main and "mute" not in main  # the mute model ranks nowhere
    task = (tmp_path / "site" / "tasks" / "dr_a.html").read_text()
    assert "Ranked by AUROC" in task
    ranks = dict((m, r) for r, m in re.findall(r'<span class="rank"[^>]*>([^<]*)</span> <a[^>]*>(\w+)<', task))
    assert ranks == {"talker": "1", "mute": "\u2014"}  # mute's higher AUROC earns no rank
    assert "badge-low_coverage" in task and "0.100" in task
