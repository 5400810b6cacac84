"""A results line's identity and the one pairing step: every field that changes a number is in the identity; a
group holds lines that differ in its axis only; every line is either in one group or left out once with its
reason; the task version lines are compared on never depends on the order they were read in; an exported folder
name is never taken twice."""

from __future__ import annotations

import random
from dataclasses import fields
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from focus_eval.analysis.lm_eval_export import folder_names, sanitize
from focus_eval.results.identity import (AXES, DEFAULTS, VARIANTS, Identity, pair, reference_versions, version_note,
                                         version_text)


def fake_line(model="m", method="linear_probe", task="dr_a", version=1, digest="t", created="", **extra):
    return SimpleNamespace(model=model, method=method, adapter=None, task=task, task_version=version,
                           task_hash=digest, created=created, n=40, coverage=None, extra=extra)


def fake_entry(line, conventions="", limited=False, no_answers=False, low=False, note=None, submitter=None,
               unverified=None, rank_unverified=False):
    return SimpleNamespace(line=line, identity=Identity.of(line, conventions, submitter), limited=limited,
                           no_answers=no_answers, low_coverage=low, version_note=note, coverage_floor=0.9,
                           convention_text=conventions, submitter=submitter, unverified=unverified,
                           rank_unverified=rank_unverified)


def test_every_identity_field_is_on_some_axis_and_has_a_default():
    named = {f for axis in AXES.values() for f in axis}
    assert named == {f.name for f in fields(Identity)} == set(DEFAULTS)
    assert set(VARIANTS) <= set(AXES)


def test_a_variant_line_is_its_base_task_with_the_variant_axis_moved():
    line = fake_line(task="dr_a@train0.5-s1", base_task="dr_a", train_fraction=0.5, train_seed=1)
    identity = Identity.of(line)
    assert identity.task == "dr_a" and identity.value("label_budget") == (0.5, 1) and not identity.plain
    assert identity.without("label_budget") == Identity.of(fake_line())
    assert Identity.of(fake_line(task="dr_a@severe", base_task="dr_a", label_rule="severe", digest="other")) \
        .without("label_rule") == Identity.of(fake_line()).without("label_rule")
    with pytest.raises(ValueError, match="unknown axis"):
        identity.without("hospital")


@given(st.one_of(st.integers(-5, 5), st.floats(-5, 5, allow_nan=False), st.text(max_size=4), st.none()))
def test_a_version_reads_the_same_whichever_way_it_was_written(value):
    text = version_text(value)
    assert isinstance(text, str)
    if isinstance(value, float) and value.is_integer():
        assert text == version_text(int(value))


LINES = st.lists(st.tuples(st.sampled_from(["dr_a", "glaucoma_a"]), st.sampled_from([1, 2, "3"]),
                           st.sampled_from(["t1", "t2"]), st.sampled_from(["", "2026-01-01", "2026-02-01"])),
                 min_size=1, max_size=12)


@given(LINES, st.randoms())
def test_the_reference_version_does_not_depend_on_reading_order(rows, rng):
    lines = [fake_line(task=t, version=v, digest=d, created=c) for t, v, d, c in rows]
    first = reference_versions(lines)
    shuffled = list(lines)
    rng.shuffle(shuffled)
    assert reference_versions(shuffled) == first
    for line in lines:  # the reference is a version the task's lines have, and only other versions get a note
        assert (version_note(line, first[line.task]) is None) == (
            (version_text(line.task_version), line.task_hash) == first[line.task])


ENTRIES = st.lists(st.tuples(
    st.sampled_from(["m1", "m2"]), st.sampled_from(["", "seed=1"]), st.sampled_from(["dr_a", "glaucoma_a"]),
    st.sampled_from([None, "blur:3"]), st.sampled_from([None, 0.5]), st.sampled_from([None, "severe"]),
    st.booleans(), st.booleans(), st.sampled_from([None, "Clinic A", "Clinic B"]),
    st.sampled_from([None, "mismatch: metrics.auroc"])), max_size=30)


@settings(max_examples=60)
@given(ENTRIES, st.sampled_from(list(AXES)), st.integers(1, 3), st.booleans(), st.booleans())
def test_a_group_differs_in_its_axis_only_and_every_line_is_accounted_for(rows, axis, min_group, baseline, ranked):
    entries = []
    for model, conventions, task, corruption, fraction, rule, limited, mute, submitter, unverified in rows:
        extra = {"base_task": task} if (corruption or fraction or rule) else {}
        extra.update({k: v for k, v in (("corruption", corruption), ("train_fraction", fraction),
                                         ("train_seed", 1 if fraction else None), ("label_rule", rule)) if v})
        entries.append(fake_entry(fake_line(model=model, task=task, **extra), conventions, limited, mute,
                                  submitter=submitter, unverified=unverified, rank_unverified=ranked))
    entries = list({e.identity: e for e in entries}.values())  # a collection holds one line per identity
    pairing = pair(entries, axis, min_group=min_group, baseline=baseline)
    grouped = [id(e) for e in pairing.entries]
    left = [id(item.entry) for item in pairing.left_out]
    assert sorted(grouped + left) == sorted(id(e) for e in entries) and not set(grouped) & set(left)
    for key, members in pairing.groups.items():
        assert len(members) >= min_group and all(e.identity.without(axis) == key for e in members)
        assert not any(e.limited or e.no_answers or (e.unverified and not ranked) for e in members)
        if axis == "submitter" and len(members) > 1:  # the same configuration from several submitters
            assert len({e.submitter for e in members}) == len(members)
        if baseline:
            assert any(e.identity.at_default(axis) for e in members)
        if axis == "configuration":
            assert all(e.identity.plain for e in members)
    assert all(item.reason for item in pairing.left_out)
    assert sum(int(n.split()[2]) for n in pairing.notes(limit=1)) == len(pairing.left_out)


NAMES = st.text(alphabet=st.sampled_from("aA_ -./@\u00e9x"), min_size=1, max_size=6)


@given(st.lists(st.tuples(NAMES, st.sampled_from(["linear_probe", "prompt"]), st.sampled_from(["", "lora"]),
                          st.sampled_from(["", "seed=1"])), unique=True, max_size=12))
def test_exported_folder_names_are_never_taken_twice(configs):
    names, notes = folder_names(configs)
    chosen = list(names.values())
    assert len({n.casefold() for n in chosen}) == len(chosen) == len(configs)
    assert all("/" not in n and n not in (".", "..") for n in chosen)
    again, _ = folder_names(random.sample(configs, len(configs)))
    assert again == names  # the same names whatever order the configurations come in
    close = len(configs) - len({sanitize("__".join(p for p in c if p)).casefold() for c in configs})
    assert len(notes) == close  # each configuration that had to move says so
