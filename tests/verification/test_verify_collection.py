"""Verification of what a leaderboard reads (``verification.verify_collection``): every line of a submission
bundle is verified, a results folder of one's own only on request; each verdict lands on the line it judges (the
same model from two bundles included) and on group lines; a line that is not verified is set aside by the one rule
of every ranking, with its state and first reason, unless unverified lines are counted, when it keeps its verdict."""

from __future__ import annotations

import pytest
from helpers.records import synthetic_root
from helpers.submissions import CLINIC_A, CLINIC_B, DATA, MODELS, OWN, TASKS, group_submissions

from focus_eval.leaderboard.conventions import collect_results
from focus_eval.results.identity import pair, set_aside
from focus_eval.verification.collection import verify_collection


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return synthetic_root(tmp_path_factory, "data", **DATA)


@pytest.fixture(scope="module")
def collection(tmp_path_factory, data_root, index):
    return collect_results(group_submissions(tmp_path_factory.mktemp("submissions"), data_root, index).paths)


def states(collection) -> tuple[dict, dict]:
    lines = {(e.submitter, e.model, e.line.task): e.verification for e in collection.entries}
    groups = {(g.submitter, g.model): g.verification for g in collection.group_lines}
    return lines, groups


def expected(own: str | None) -> tuple[dict, dict]:
    state = {OWN: own, CLINIC_A: "verified", CLINIC_B: "mismatch"}
    lines = {(None if s == OWN else s, m, t): state[s] for s, models in MODELS.items() for m in models for t in TASKS}
    groups = {(None if s == OWN else s, m): state[s] for s, models in MODELS.items() for m in models}
    return lines, groups


def test_bundles_are_verified_and_ones_own_folders_only_on_request(collection, data_root, index):
    verified = verify_collection(collection, data_root=data_root, index=index)
    assert states(verified.collection) == expected(None)
    assert verified.counts() == {"verified": 6, "mismatch": 3, "unverifiable": 0}
    assert {v.submitter for v in verified.verdicts} == {CLINIC_A, CLINIC_B}
    everything = verify_collection(collection, everything=True, data_root=data_root, index=index)
    assert states(everything.collection) == expected("verified")
    assert everything.counts() == {"verified": 12, "mismatch": 3, "unverifiable": 0}
    assert states(collection) == ({k: None for k in expected(None)[0]}, {k: None for k in expected(None)[1]})


def test_a_tampered_line_is_set_aside_with_its_reason_unless_unverified_lines_are_counted(collection, data_root,
                                                                                          index):
    entries = verify_collection(collection, data_root=data_root, index=index).collection.entries
    tampered = [e for e in entries if e.submitter == CLINIC_B]
    assert len(tampered) == len(TASKS)
    for entry in tampered:
        assert entry.unverified.startswith("mismatch: metrics.auroc: reported 1, recomputed 0.")
        assert set_aside(entry) == f"unverified: {entry.unverified}" and "unverified" in entry.flags
    pairing = pair(entries, "configuration", min_group=1)
    assert sorted(id(item.entry) for item in pairing.left_out) == sorted(map(id, tampered))
    counted = verify_collection(collection, data_root=data_root, index=index, include_unverified=True)
    kept = [e for e in counted.collection.entries if e.submitter == CLINIC_B]
    assert [e.verification for e in kept] == ["mismatch"] * len(TASKS)
    assert all(set_aside(e) is None for e in kept) and not pair(counted.collection.entries, "configuration",
                                                                min_group=1).left_out


def test_without_the_data_a_bundle_is_held_to_the_published_test_split(collection, index):
    # these synthetic data are not the demo's, whose test splits the shipped digests describe
    judged = [e for e in verify_collection(collection, index=index).collection.entries if e.submitter == CLINIC_A]
    assert len(judged) == 4 and {e.verification for e in judged} == {"mismatch"}
    assert all(any("published test split" in reason for reason in e.verdict.reasons) for e in judged)
