"""Every registered analysis holds every axis of a line's identity fixed except the one it declares it varies:
on a results folder holding every kind of line runs write (label budgets, label rules, paraphrases, corruptions,
other seeds and zero-shot scales, --limit runs, another task version, a configuration without answers, the same
configurations from another submitter) it gives
exactly the rows it gives on the plain lines and the lines of its own axis, and its notes name each line it left
out. A new analysis is checked here as soon as it is registered."""

from __future__ import annotations

import json
import re

import pytest

from focus_eval.analysis import ANALYSES
from focus_eval.analysis.base import ReportOptions
from focus_eval.errors import FocusError
from focus_eval.leaderboard.conventions import collect_results
from focus_eval.results.identity import AXES, line_name
from helpers.variant_lines import KINDS, PLAIN, SUBMITTED, variant_paths, write_variants

# the lines of each axis beside the plain ones: another configuration (another seed, a zero-shot scale, another
# submitter's run) is what the configuration-wide analyses compare; each variant axis has its own kind of line
OWN_KINDS = {"configuration": ("conventions", SUBMITTED), "task": ("conventions", SUBMITTED),
             "corruption": ("corruption",), "label_budget": ("label_budget",), "label_rule": ("label_rule",),
             "prompt_variant": ("prompt_variant",), "submitter": (SUBMITTED,)}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("variants")
    every = write_variants(root / "every" / "results")
    own = {axis: write_variants(root / axis / "results", (PLAIN, *kinds)) for axis, kinds in OWN_KINDS.items()}
    return every, own


def outcome(analysis, folder):
    paths = variant_paths(folder)
    collection = collect_results(paths)
    try:
        table = analysis.compute(collection, ReportOptions(n_boot=40))
    except FocusError as error:
        text = str(error)
        for path in reversed(paths):  # the bundle's name first: the folder's name is a part of it
            text = text.replace(str(path), "RESULTS")
        return ("error", text), [], collection
    return ("table", json.dumps([list(r) for r in table.rows], default=str)), table.notes, collection


def test_the_folder_holds_every_kind_of_line(folders):
    every, _ = folders
    entries = collect_results([every]).entries
    assert len(entries) == 27
    submitted = collect_results(variant_paths(every)).entries
    assert len(submitted) == 31 and {e.submitter for e in submitted} == {None, "Clinic B"}
    assert {e.identity.variants()[0] for e in entries if not e.identity.plain} == {
        "blur:3", "train 0.5 draw 1", "train 0.5 draw 2", "rule severe", "prompt plain"}
    assert {c.label for e in entries for c in e.conventions} == {"seed 1", "zs-scale 100", "limit 5"}
    assert sum(e.no_answers for e in entries) == 2 and sum(e.version_note is not None for e in entries) == 1
    assert len({e.key for e in entries}) == len(entries)


@pytest.mark.parametrize("name", ANALYSES.names())
def test_every_analysis_compares_only_lines_that_differ_in_its_axis(folders, name):
    analysis = ANALYSES.get(name)
    assert analysis.varies in AXES, f"{name} declares no axis it varies"
    every, own = folders
    alone, _, base = outcome(analysis, own[analysis.varies])
    together, notes, collection = outcome(analysis, every)
    assert together == alone
    if together[0] == "table" and "results" in analysis.inputs:
        named = "\n".join(notes)
        kept = {e.key for e in base.entries}
        unnamed = [line_name(e) for e in collection.entries if e.key not in kept and line_name(e) not in named]
        # a note names 20 lines of a reason and counts the others ("and N more")
        counted = sum(int(n) for n in re.findall(r"; and (\d+) more", named))
        assert len(unnamed) <= counted, f"{name}: {unnamed} left out without a word"


def test_kinds_cover_every_axis():
    assert set(OWN_KINDS) == set(AXES) and set(KINDS) >= {k for kinds in OWN_KINDS.values() for k in kinds}
