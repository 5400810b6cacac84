"""The benchmark card: the shipped copy is docs/BENCHMARK_CARD.md word for word, the site writes it as
benchmark-card.html with its sections, and every page of a built site links to it from its footer with a link
that resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from focus_eval.leaderboard import build_site
from focus_eval.leaderboard.draw.card import card_html, card_text
from helpers import leaderboard_data as data

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = data.write_results(tmp_path_factory.mktemp("card") / "results")
    return build_site([root], root.parent / "site")


def test_shipped_card_is_the_documented_card():
    assert card_text() == (ROOT / "docs" / "BENCHMARK_CARD.md").read_text(encoding="utf-8")


def test_card_page_has_its_sections_escaped(site):
    html = (site.out_dir / "benchmark-card.html").read_text(encoding="utf-8")
    for heading in ("Intended use", "Results are not a clinical validation", "Data provenance and licences",
                    "Known biases and limits"):
        assert f">{heading}</h2>" in html
    assert "<td>BRSET</td>" in html and "CC BY 4.0" in html
    assert card_html("a <b> & `c<d>` **e**") == "<p>a &lt;b&gt; &amp; <code>c&lt;d&gt;</code> <strong>e</strong></p>"


def test_every_page_links_to_the_card_and_the_link_resolves(site):
    pages = sorted(site.out_dir.rglob("*.html"))
    assert len(pages) > 10
    for page in pages:
        links = re.findall(r'href="([^"]*benchmark-card\.html)"', page.read_text(encoding="utf-8"))
        assert links, f"{page.name} has no link to the benchmark card"
        assert all((page.parent / link).resolve() == (site.out_dir / "benchmark-card.html").resolve()
                   and (page.parent / link).is_file() for link in links)
