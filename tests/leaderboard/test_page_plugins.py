"""A leaderboard page plugin of another package that cannot be imported costs its own page only: the site is built
with every other page, and the build names the plugin."""

from __future__ import annotations

import pytest

from focus_eval import registry
from focus_eval.cli import main
from focus_eval.leaderboard.pages.views import PAGES, PAGES_GROUP
from helpers.leaderboard_data import write_results
from helpers.open_fixtures import broken_distribution


@pytest.fixture
def broken_page(tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "_WARNED", set())
    monkeypatch.setattr(registry, "_BROKEN", {})
    monkeypatch.syspath_prepend(str(broken_distribution(tmp_path / "plugin", "brokenpage", "brokenpage_mod",
                                                        {PAGES_GROUP: "broken_page"})))
    PAGES.names()  # the built-in pages are in place before the entry points are read again
    monkeypatch.setattr(PAGES, "_entry_points_read", False)
    yield "broken_page"
    PAGES.unregister("broken_page")


def test_a_page_plugin_that_fails_to_import_leaves_the_rest_of_the_site(broken_page, tmp_path, capsys):
    results = write_results(tmp_path / "results")
    assert main(["leaderboard", str(results), "-o", str(tmp_path / "site")]) == 0
    out = capsys.readouterr().out
    notes = [line for line in out.splitlines() if "page left out of the site" in line]
    assert len(notes) == 1 and "entry point broken_page = brokenpage_mod:THING" in notes[0]
    assert "distribution brokenpage 0.1" in notes[0] and "this plugin is broken" in notes[0]
    for page in ("index.html", "domains.html", "calibration.html", "ranks.html"):
        assert (tmp_path / "site" / page).is_file()
    assert not (tmp_path / "site" / "broken_page.html").exists()
