"""Linear probe on frozen image embeddings: class-balanced logistic regression on standardised features,
with C chosen on the validation split by AUROC; ``compat`` reproduces the reference probe (L2-normalised
features, C = 1)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from focus_eval.errors import FocusError
from focus_eval.runner.methods.base import EmbeddingMethod, RunContext
from focus_eval.runner.units import Unit

C_GRID = (0.001, 0.01, 0.1, 1.0, 10.0)


@dataclass
class ProbeResult:
    scores: np.ndarray
    preds: np.ndarray
    info: dict = field(default_factory=dict)


def _l2(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norm, 1e-12)


def _auroc(y: np.ndarray, s: np.ndarray) -> float | None:
    from focus_eval.metrics.core import auroc

    return auroc(y, s)


def fit_predict(train_x, train_y, val_x, val_y, test_x, *, compat: bool = False, seed: int = 0) -> ProbeResult:
    """Fit on train (choosing C on val where it has both classes) and score the test rows."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    train_y = np.asarray(train_y, dtype=int)
    if len(np.unique(train_y)) < 2:
        raise FocusError(f"the train split has a single class ({len(train_y)} rows); a probe cannot be fitted")

    def model(c: float):
        return LogisticRegression(C=c, class_weight="balanced", max_iter=2000 if not compat else 1000,
                                  random_state=seed)

    if compat:
        clf = model(1.0).fit(_l2(train_x), train_y)
        x = _l2(test_x)
        return ProbeResult(clf.predict_proba(x)[:, 1], clf.predict(x), {"probe": "compat", "C": 1.0})

    scaler = StandardScaler().fit(train_x)
    tx = scaler.transform(train_x)
    chosen, val_scores = 1.0, {}
    has_val = val_x is not None and len(val_x) and len(np.unique(val_y)) == 2
    if has_val:
        vx = scaler.transform(val_x)
        for c in C_GRID:
            auc = _auroc(np.asarray(val_y), model(c).fit(tx, train_y).predict_proba(vx)[:, 1])
            val_scores[str(c)] = auc
        # highest val AUROC; ties go to the stronger regularisation (smaller C, first in the grid)
        chosen = max(C_GRID, key=lambda c: (val_scores[str(c)] if val_scores[str(c)] is not None else -1.0, -c))
    clf = model(chosen).fit(tx, train_y)
    x = scaler.transform(test_x)
    info = {"probe": "standardised", "C": chosen, "val_auroc": val_scores or None,
            "c_selection": "val_auroc" if has_val else "default (no val split with both classes)"}
    return ProbeResult(clf.predict_proba(x)[:, 1], clf.predict(x), info)


class LinearProbe(EmbeddingMethod):
    """``linear_probe``: fit on the train split's embeddings (C chosen on val), score the test split."""

    name = "linear_probe"
    splits = ("train", "val", "test")
    hard_label = "pred = the probe's class"

    def predict(self, context: RunContext, unit: Unit, x_test: np.ndarray, memo: dict):
        task = unit.task

        failed = {}

        def xy(split):
            records = context.records(unit, split)
            rows, x = context.embeddings.matrix(records)
            failed[split] = len(records) - len(rows)
            if failed[split]:
                first = next(r.image_id for r in records if r.image_id not in context.embeddings.vectors)
                context.warn(f"{unit.stem}: {failed[split]} {split} image(s) could not be embedded and are left out "
                             f"of the probe (first: {first}: {context.embeddings.errors.get(first, 'not embedded')})")
            return (None, None) if x is None else (x, np.array([r.label(task.target) for r in rows]))

        tx, ty = xy("train")
        if tx is None:
            raise FocusError(f"task {task.name}: no train images could be embedded")
        vx, vy = xy("val")
        o = context.options
        result = fit_predict(tx, ty, vx, vy, x_test, compat=o.probe_compat, seed=o.seed)
        extra = {**result.info, "n_train": int(len(ty)), "n_val": 0 if vy is None else int(len(vy)),
                 "n_errors_train": failed["train"], "n_errors_val": failed["val"]}
        return result.scores, result.preds, extra
