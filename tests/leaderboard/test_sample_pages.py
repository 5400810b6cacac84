"""Per-image pages of the leaderboard: one per results line with a sample file, none with --no-samples, and
thumbnails only from a data root given with --thumbnails."""

from __future__ import annotations

import pytest

from helpers import leaderboard_data as data
from focus_eval.errors import FocusError
from focus_eval.leaderboard import build_site
from focus_eval.leaderboard.pages.sample_pages import cell_of


@pytest.fixture(scope="module")
def known(tmp_path_factory):
    return data.write_known(tmp_path_factory.mktemp("samples") / "known")


def test_confusion_cells_follow_label_and_hard_label():
    assert [cell_of(1, 1), cell_of(1, 0), cell_of(0, 1), cell_of(0, 0)] == ["tp", "fn", "fp", "tn"]
    assert cell_of(1, None) == cell_of(None, 0) == "none"


def test_each_line_with_a_sample_file_gets_a_page_linked_from_its_task(known, tmp_path):
    report = build_site([known], tmp_path / "site")
    pages = [p for p in report.pages if p.startswith("samples/")]
    assert len(pages) == 2 and all(p.startswith("samples/dr_alpha/") for p in pages)
    task = (tmp_path / "site" / "tasks" / "dr_alpha.html").read_text(encoding="utf-8")
    for page in pages:
        assert f'href="../{page}"' in task
    text = (tmp_path / "site" / pages[0]).read_text(encoding="utf-8")
    assert all(f"<code>k{i:02d}</code>" in text for i in range(40))
    # known samples: 20 female rows all scored 0.6 (predicted positive) -> 10 false positives at least
    assert 'data-cell="fp"' in text and 'data-cell="tn"' in text


def test_no_samples_builds_no_sample_page_and_leaks_no_id(known, tmp_path):
    report = build_site([known], tmp_path / "site", no_samples=True)
    assert not [p for p in report.pages if p.startswith("samples/")]
    assert not (tmp_path / "site" / "samples").exists() and not (tmp_path / "site" / "thumbs").exists()
    for path in (tmp_path / "site").rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        assert "k00" not in text and "kp00" not in text and "Per-image predictions" not in text, path


def test_thumbnails_need_a_data_root_and_refuse_no_samples(known, tmp_path):
    with pytest.raises(FocusError, match="--data-root"):
        build_site([known], tmp_path / "a", thumbnails=True)
    with pytest.raises(FocusError, match="--no-samples"):
        build_site([known], tmp_path / "b", thumbnails=True, data_root=tmp_path, no_samples=True)


def test_thumbnails_are_small_jpegs_of_the_test_images(tmp_path_factory, tmp_path):
    from PIL import Image

    from focus_eval.data.registry import load_dataset
    from helpers.records import synthetic_root

    root = synthetic_root(tmp_path_factory, "thumb-data", n=24, seed=3)
    records = [r for r in load_dataset("synth_desktop", root).records if r.split == "test"][:6]
    rows = [{"image_id": r.image_id, "patient_id": r.patient_id, "split": "test", "label": i % 2,
             "score": 0.3 + 0.1 * i, "pred": int(0.3 + 0.1 * i >= 0.5), "error": None}
            for i, r in enumerate(records)]
    results = tmp_path / "results" / "m"
    data.write_lines(results / "results.jsonl", [data.line(task="dr_synth_desktop", dataset="synth_desktop")])
    data.write_lines(results / "samples" / "dr_synth_desktop.linear_probe.jsonl", rows)
    site = tmp_path / "site"
    build_site([tmp_path / "results"], site, thumbnails=True, data_root=root)
    thumbs = sorted((site / "thumbs").glob("*.jpg"))
    assert len(thumbs) == len(rows)
    for path in thumbs:
        with Image.open(path) as image:
            assert image.format == "JPEG" and max(image.size) <= 96
    page = next((site / "samples").rglob("*.html")).read_text(encoding="utf-8")
    assert page.count('class="thumb"') == len(rows)
    assert not any(r["image_id"] in p.name for r in rows for p in thumbs)  # ids are hashed, not file names
