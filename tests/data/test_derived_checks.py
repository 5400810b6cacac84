"""Derived labels are not silently guessed: OIA-ODIR diagnostic keywords that match no keyword rule are counted
and reported (with their counts), not folded into 'other' without a word."""

from __future__ import annotations

from PIL import Image

from focus_eval.data.registry import load_dataset
from focus_eval.synth import raw_oia_odir


def test_unmatched_oia_odir_keywords_are_reported_with_their_counts(tmp_path):
    raw_oia_odir.write(tmp_path / "oia_odir", seed=4, image=lambda labels: Image.new("RGB", (32, 32), (120, 60, 30)))
    load = load_dataset("oia_odir", tmp_path)
    (warning,) = [w for w in load.warnings if "match no rule" in w]
    assert warning.startswith("3 diagnostic keyword(s) match no rule and count as 'other' (3 eye(s)): ")
    for keyword in ("'laser spot' (1)", "'drusen' (1)", "'epiretinal membrane' (1)"):
        assert keyword in warning
    assert load.metadata["unmatched_keywords"] == {"laser spot": 1, "drusen": 1, "epiretinal membrane": 1}
    assert "normal fundus" not in warning and "lens dust" not in warning  # rules and quality remarks match
