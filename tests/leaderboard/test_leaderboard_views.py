"""The paper's views and the main table, built from a results set with known values (leaderboard_data.KNOWN_*):
every number a page or its CSV shows is checked against what the fixture's tables give by hand."""

from __future__ import annotations

import csv
import re
from statistics import fmean

import numpy as np
import pytest

from helpers import leaderboard_data as data
from helpers.leaderboard_data import KNOWN_MODELS, KNOWN_TASKS, tables
from focus_eval.leaderboard import build_site


@pytest.fixture(scope="module")
def known(tmp_path_factory):
    root = data.write_known(tmp_path_factory.mktemp("known") / "results")
    return build_site([root, root / "seed-1", root / "eye-vit"], root.parent / "site")


def page(report, name: str) -> str:
    return (report.out_dir / name).read_text(encoding="utf-8")


def rows_of(report, name: str) -> list[dict]:
    with open(report.out_dir / "data" / f"{name}.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def aurocs(model: str) -> tuple[float, ...]:
    return KNOWN_MODELS[model][4]


def test_main_table_rows_means_intervals_and_shared_ranks(known):
    rows = [row for row in tables(known.out_dir / "index.html")["main-table"] if row[0]["class"] != "group-head"]
    shown = [(cells[0][1], cells[1][0]) for _, cells in rows]
    expected = sorted([(m, fmean(aurocs(m))) for m in KNOWN_MODELS if not KNOWN_MODELS[m][3]]
                      + [("gen-vit [seed 1]", fmean(data.SEED1_AUROC))], key=lambda pair: -pair[1])
    trained = [(name, value) for name, value in shown if "rand-vit" not in name]
    assert [float(v) for _, v in trained] == pytest.approx([v for _, v in expected])
    assert [name.split()[:2] for name, _ in trained] == [["1", "eye-vit"], ["2", "gen-vit"], ["3", "eye-clip"],
                                                          ["3", "gen-vit"], ["5", "med-clip"]]  # 0.800 twice: a tie
    attrs, cells = rows[0]
    # the interval of a mean comes from its tasks' bootstrap replicates; two of eye-vit's tasks have no sample file
    assert cells[1][1] == f"{fmean(aurocs('eye-vit')):.3f} 3 tasks"
    dr = fmean(aurocs("eye-vit")[i] for i, (_, _, target) in enumerate(KNOWN_TASKS) if target == "dr")
    assert float(cells[2][0]) == pytest.approx(dr) and cells[4][1] == "3/3"
    seed = next(cells for _, cells in rows if "seed 1" in cells[0][1])
    assert "seed 1" in seed[-1][1] and float(seed[1][0]) == pytest.approx(fmean(data.SEED1_AUROC))
    baseline = rows[-1]
    assert "rand-vit" in baseline[1][0][1] and "is-untrained" in baseline[0]["class"]
    assert all(float(cells[1][0]) < data.LIMITED_AUROC for _, cells in rows)  # the --limit run is not ranked


def test_limited_runs_are_ranked_only_when_asked(known, tmp_path):
    root = known.out_dir.parent / "results"
    assert known.n_limited == 3
    assert "3 results lines of <code>--limit</code> runs are left out" in page(known, "index.html")
    ranking = tables(known.out_dir / "tasks" / "dr_alpha.html")["ranking"]
    limited = [cells for attrs, cells in ranking if "is-limited" in attrs["class"]]
    assert len(limited) == 1 and limited[0][0][1].startswith("\u2014")  # listed, marked, not ranked
    report = build_site([root, root / "seed-1", root / "eye-vit"], tmp_path / "site", include_limited=True)
    first = tables(report.out_dir / "index.html")["main-table"][0][1]
    assert first[0][1].split()[:2] == ["1", "eye-vit"] and float(first[1][0]) == pytest.approx(data.LIMITED_AUROC)
    assert "limited" in first[-1][1] and "limit 5" in first[0][1]


def test_domain_split_per_family_method_and_domain(known):
    table = {(r["target"], r["family"], r["method"], r["domain"]): r for r in rows_of(known, "domains")}
    for model, (family, domain, method, untrained, values, eces) in KNOWN_MODELS.items():
        row = table.get(("all", family, method, domain))
        if untrained:
            assert ("all", family, method, domain) not in table or row["n_models"] == "1"
            continue
        assert float(row["auroc"]) == pytest.approx(fmean(values)) and row["n_lines"] == "3"
        assert float(row["ece"]) == pytest.approx(fmean(eces))
        glaucoma = table[("glaucoma", family, method, domain)]
        assert float(glaucoma["auroc"]) == pytest.approx(values[1])
    # the page's table shows the same numbers, and the figure one dot per (family, method, domain)
    shown = {tuple(c[1] for c in cells[:4]): cells[4][0] for _, cells in tables(known.out_dir / "domains.html")
             ["domains-table"]}
    assert float(shown[("All targets", "Dual encoder (CLIP-style)", "Zero-shot", "Medical")]) == pytest.approx(
        fmean(aurocs("med-clip")))
    assert page(known, "domains.html").count('class="dot series domain-') == 4


def test_per_dataset_table(known):
    by_config = {(r["model"], r["conventions"], r["dataset"]): r for r in rows_of(known, "datasets")}
    for model, spec in KNOWN_MODELS.items():
        alpha, beta = fmean(spec[4][:2]), spec[4][2]
        assert float(by_config[(model, "", "alpha")]["auroc"]) == pytest.approx(alpha)
        assert by_config[(model, "", "alpha")]["n_tasks"] == "2"
        assert float(by_config[(model, "", "beta")]["auroc"]) == pytest.approx(beta)
    assert float(by_config[("gen-vit", "seed 1", "alpha")]["auroc"]) == pytest.approx(fmean(data.SEED1_AUROC[:2]))
    rows = {cells[0][1].split(" untrained")[0]: cells for _, cells in tables(known.out_dir / "datasets.html")
            ["datasets-table"]}
    assert float(rows["eye-vit \u00b7 linear_probe"][2][0]) == pytest.approx(aurocs("eye-vit")[2])
    assert "<strong>0.950</strong>" in page(known, "datasets.html")  # the best on beta, bold


def test_auroc_by_family_per_dataset(known):
    rows = rows_of(known, "families")
    alpha_vm = sorted(float(r["auroc"]) for r in rows if r["dataset"] == "alpha" and r["family"] == "vm"
                      and r["untrained"] == "false")
    assert alpha_vm == pytest.approx(sorted([fmean(aurocs("gen-vit")[:2]), fmean(data.SEED1_AUROC[:2]),
                                             fmean(aurocs("eye-vit")[:2])]))
    html = page(known, "families.html")
    assert html.count('<circle class="dot') == len(rows) == 2 * 6  # six configurations on two datasets
    assert f"Vision encoder: mean {fmean(alpha_vm):.3f} of 3" in html


def test_calibration_by_family(known):
    rows = rows_of(known, "calibration")
    vm = [float(r["ece"]) for r in rows if r["family"] == "vm"]
    assert sorted(vm) == pytest.approx(sorted(KNOWN_MODELS["gen-vit"][5] + KNOWN_MODELS["eye-vit"][5]))
    html = page(known, "calibration.html")
    assert f"mean ECE {fmean(vm):.3f} over 6 lines" in html
    pooled = data.known_samples(True) + data.known_samples(False)  # the two vision encoders' sample files
    y, p = np.array([r["label"] for r in pooled]), np.array([r["score"] for r in pooled])
    assert f"pooled ECE {data._ece(y, p):.3f} over 80 images" in html
    bins = [r for r in rows_of(known, "calibration-bins") if r["family"] == "vm"]
    assert sum(int(b["count"]) for b in bins) == 80


def _group_values(rows: list[dict], key: str, groups: tuple[str, str]) -> list[tuple[float, float]]:
    """(AUROC, accuracy) of each group, worked out from the fixture's rows alone."""
    out = []
    for name in groups:
        members = [r for r in rows if key(r) == name]
        y, p = np.array([r["label"] for r in members]), np.array([r["score"] for r in members])
        out.append((data._auroc(y, p), float(((p >= 0.5) == y).mean())))
    return out


def test_fairness_per_group_values_and_direction(known):
    rows = {(r["model"], r["task"], r["attribute"]): r for r in rows_of(known, "fairness") if not r["conventions"]}
    samples = data.known_samples(True)
    sex = rows[("gen-vit", "dr_alpha", "sex")]
    (male_auroc, male_acc), (female_auroc, female_acc) = _group_values(samples, lambda r: r["sex"], ("male", "female"))
    assert (sex["group_a"], sex["group_b"]) == ("male", "female") and sex["n_a"] == sex["n_b"] == "20"
    assert float(sex["auroc_gap_a"]) == male_auroc == 1.0 and float(sex["auroc_gap_b"]) == female_auroc == 0.5
    assert float(sex["accuracy_gap_a"]) == male_acc and float(sex["accuracy_gap_b"]) == female_acc
    assert sex["auroc_gap_better"] == "male" and float(sex["auroc_gap"]) == 0.5
    age = rows[("gen-vit", "dr_alpha", "age")]
    young, old = _group_values(samples, lambda r: "y" if r["age"] <= 55 else "o", ("y", "o"))
    assert (float(age["auroc_gap_a"]), float(age["auroc_gap_b"])) == pytest.approx((young[0], old[0]))
    assert age["group_a"] == "age \u2264 55"
    flat = rows[("eye-vit", "dr_alpha", "sex")]  # every score 0.6: both groups at 0.5, neither better
    assert flat["auroc_gap_better"] == "" and flat["auroc_gap_a"] == flat["auroc_gap_b"] == "0.5"
    assert rows[("med-clip", "dr_alpha", "sex")]["auroc_gap_a"] == ""  # no sample file: no group values
    assert "male 1.000 \u25b2 \u00b7 female 0.500" in page(known, "fairness.html")


def test_robustness_per_group_values(known):
    row = next(r for r in rows_of(known, "robustness")
               if r["model"] == "gen-vit" and r["task"] == "dr_alpha" and not r["conventions"])
    (adequate, _), (inadequate, _) = _group_values(data.known_samples(True), lambda r: r["quality"],
                                                   ("adequate", "inadequate"))
    assert (row["group_a"], row["group_b"]) == ("adequate", "inadequate")
    assert (float(row["auroc_gap_a"]), float(row["auroc_gap_b"])) == pytest.approx((adequate, inadequate))
    assert float(row["auroc_gap"]) == 0.02 and float(row["ece_gap"]) == 0.03  # the gaps as the results line has them


def test_fine_tuning_verdicts_digits_and_ticks(known):
    verdicts = {(r["adapter"], r["metric"]): r["verdict"] for r in rows_of(known, "finetune")}
    words = {"better": "\u25b2 better, significant", "worse": "\u25bc worse, significant",
             "not-significant": "not significant", "underpowered": "not significant (underpowered)"}
    assert {key: words[v] for key, v in verdicts.items()} == {(a, m): w for a, m, *_, w in data.KNOWN_DELTAS}
    html = page(known, "finetune.html")
    assert "+1.7e-06" in html and "0.000 [0.000, 0.000]" not in html
    summary = {r["domain"]: r for r in rows_of(known, "finetune-summary")}
    assert summary["in_domain"]["verdict"] == "better" and summary["ood"]["verdict"] == "underpowered"
    forest = html[html.index('id="forest"'):html.index("</svg>", html.index('id="forest"'))]
    ticks = re.findall(r'text-anchor="middle">([^<]+)</text>', forest)
    assert len(ticks) >= 3 and len(set(ticks)) == len(ticks) and "0" in ticks


def test_model_card_from_the_run_manifest_and_results(known):
    html = page(known, "models/gen-vit.html")
    m = data.MANIFEST
    assert f'href="https://huggingface.co/{m["source"]}/tree/{m["revision"]}"' in html
    assert m["licence"] in html and "General ViT" in html and "run manifest run-20260507T110000Z.json" in html
    assert "alpha (2 tasks), beta (1 task)" in html
    provenance = tables(known.out_dir / "models" / "gen-vit.html")["provenance"]
    seed0 = [cells for _, cells in provenance if "defaults" in cells[-1][1]]
    assert len(seed0) == 3 and all(c[2][1] == "2026-05-07" and c[3][1] == m["version"]
                                   and c[4][1] == m["commit"][:10] for c in seed0)
    assert sum("seed 1" in cells[-1][1] for _, cells in provenance) == 3
    best = html[html.index("<h3>Best</h3>"):html.index("<h3>Worst</h3>")]
    assert best.index("dr_beta") < best.index("dr_alpha")  # 0.91 and 0.90 on dr_beta come first
