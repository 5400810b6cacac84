"""Linear probe on frozen image embeddings: class-balanced logistic regression on standardised features, binary
or multinomial, with C chosen on the validation split by log-loss (a proper scoring rule; ``--probe-select
auroc`` chooses by AUROC instead); ``compat`` reproduces the reference probe (L2-normalised features, C = 1).
Multi-label tasks get one binary probe per class."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from focus_eval.errors import FocusError
from focus_eval.runner.methods.base import EmbeddingMethod, RunContext
from focus_eval.runner.units import Unit

C_GRID = (0.001, 0.01, 0.1, 1.0, 10.0)
SELECTIONS = ("log_loss", "auroc")  # how C is chosen on the validation split
_EPS = 1e-15  # probabilities are clipped here before the log (as scikit-learn's log_loss did)


@dataclass
class ProbeResult:
    """Class probabilities of the test rows (rows x classes), hard labels and notes for the results line;
    ``also``: the class probabilities of each further matrix scored by the same fitted probe."""

    probs: np.ndarray
    preds: np.ndarray
    info: dict = field(default_factory=dict)
    also: list[np.ndarray] = field(default_factory=list)

    @property
    def scores(self) -> np.ndarray:
        """P(class 1): the score of a binary probe."""
        return self.probs[:, 1]


def _l2(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norm, 1e-12)


def log_loss(y: np.ndarray, probs: np.ndarray) -> float:
    """Mean negative log-probability of the true class (probabilities clipped to [1e-15, 1])."""
    picked = probs[np.arange(len(y)), np.asarray(y, dtype=int)]
    return float(-np.mean(np.log(np.clip(picked, _EPS, 1.0))))


def macro_auroc(y: np.ndarray, probs: np.ndarray) -> float | None:
    """AUROC of a binary probe, or the mean one-vs-rest AUROC over the classes present in ``y``."""
    from focus_eval.metrics.core import auroc

    y = np.asarray(y, dtype=int)
    if probs.shape[1] == 2:
        return auroc(y, probs[:, 1])
    values = [auroc((y == k).astype(int), probs[:, k]) for k in range(probs.shape[1])]
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else None


def criterion(select: str, y: np.ndarray, probs: np.ndarray) -> float | None:
    """The validation figure C is chosen by, as recorded: log-loss (lower is better) or AUROC (higher)."""
    return log_loss(y, probs) if select == "log_loss" else macro_auroc(y, probs)


def _full_probs(clf, x: np.ndarray, n_classes: int) -> np.ndarray:
    """Probabilities over all ``n_classes`` classes (a class absent from the train split gets 0)."""
    out = np.zeros((len(x), n_classes))
    out[:, clf.classes_.astype(int)] = clf.predict_proba(x)
    return out


def _choose(select: str, figures: dict[float, float | None]) -> float:
    """Best C by the criterion; ties (and undefined figures last) go to the stronger regularisation."""
    def key(c):
        value = figures[c]
        if value is None:
            return (1, 0.0, c)
        return (0, value if select == "log_loss" else -value, c)
    return min(C_GRID, key=key)


def fit_predict(train_x, train_y, val_x, val_y, test_x, *, compat: bool = False, seed: int = 0,
                select: str = "log_loss", n_classes: int = 2, also: tuple = ()) -> ProbeResult:
    """Fit on train (choosing C on val where it has two classes or more) and score the test rows, and each
    matrix of ``also`` in a call of its own (so the test rows' numbers do not depend on them)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    if select not in SELECTIONS:
        raise FocusError(f"unknown probe selection {select!r}; expected one of {', '.join(SELECTIONS)}")
    train_y = np.asarray(train_y, dtype=int)
    if len(np.unique(train_y)) < 2:
        raise FocusError(f"the train split has a single class ({len(train_y)} rows); a probe cannot be fitted")

    def model(c: float):
        return LogisticRegression(C=c, class_weight="balanced", max_iter=2000 if not compat else 1000,
                                  random_state=seed)

    if compat:
        clf = model(1.0).fit(_l2(train_x), train_y)
        probs = _full_probs(clf, _l2(test_x), n_classes)
        return ProbeResult(probs, probs.argmax(axis=1), {"probe": "compat", "C": 1.0},
                           [_full_probs(clf, _l2(x), n_classes) for x in also])

    scaler = StandardScaler().fit(train_x)
    tx = scaler.transform(train_x)
    chosen, figures = 1.0, {}
    has_val = val_x is not None and len(val_x) and len(np.unique(val_y)) >= 2
    if has_val:
        vx, vy = scaler.transform(val_x), np.asarray(val_y, dtype=int)
        for c in C_GRID:
            figures[c] = criterion(select, vy, _full_probs(model(c).fit(tx, train_y), vx, n_classes))
        chosen = _choose(select, figures)
    clf = model(chosen).fit(tx, train_y)
    probs = _full_probs(clf, scaler.transform(test_x), n_classes)
    info = {"probe": "standardised" if n_classes == 2 else "standardised multinomial", "C": chosen,
            "probe_select": select,
            f"val_{select}": {str(c): v for c, v in figures.items()} or None,
            "c_selection": f"val_{select}" if has_val else "default (no val split with two classes)"}
    return ProbeResult(probs, probs.argmax(axis=1), info,
                       [_full_probs(clf, scaler.transform(x), n_classes) for x in also])


def fit_predict_multilabel(train_x, train_y, val_x, val_y, test_x, **options) -> ProbeResult:
    """One binary probe per class of a multi-label task (``*_y`` are rows x classes of 0/1): P(class present)
    per class, and the classes at P >= 0.5 as the predicted set. A class with one value in the train split
    gets its train share as a constant probability."""
    train_y = np.asarray(train_y, dtype=int)
    probs = np.zeros((len(test_x), train_y.shape[1]))
    per_class = {}
    for k in range(train_y.shape[1]):
        if len(np.unique(train_y[:, k])) < 2:
            probs[:, k] = train_y[:, k].mean()
            per_class[str(k)] = {"C": None, "c_selection": "constant (one value in the train split)"}
            continue
        vy = None if val_y is None else np.asarray(val_y, dtype=int)[:, k]
        result = fit_predict(train_x, train_y[:, k], val_x, vy, test_x, **options)
        probs[:, k] = result.scores
        per_class[str(k)] = {key: result.info.get(key) for key in ("C", "c_selection")}
    info = {"probe": "compat" if options.get("compat") else "standardised", "probe_select": options.get("select"),
            "per_class": per_class, "multilabel_rule": "one binary probe per class; predicted set: P >= 0.5"}
    return ProbeResult(probs, (probs >= 0.5).astype(int), info)


class LinearProbe(EmbeddingMethod):
    """``linear_probe``: fit on the train split's embeddings (C chosen on val), score the test split."""

    name = "linear_probe"
    splits = ("train", "val", "test")
    hard_label = "pred = the probe's class"
    output_types = ("binary", "multiclass", "multilabel", "multiple_choice")

    def predict(self, context: RunContext, unit: Unit, x_test: np.ndarray, memo: dict):
        predicted, extra = self.predict_splits(context, unit, {"test": x_test}, memo)
        return (*predicted["test"], extra)

    def predict_splits(self, context: RunContext, unit: Unit, xs: dict[str, np.ndarray], memo: dict):
        """One probe per unit, fitted once; the test rows and every other scored split's rows scored by it."""
        task = unit.task
        x_test, others = xs["test"], [split for split in xs if split != "test"]
        failed = {}

        def xy(split):
            records = context.records(unit, split)
            rows, x = context.embeddings.matrix(records)
            failed[split] = len(records) - len(rows)
            if failed[split]:
                first = next(r.image_id for r in records if r.image_id not in context.embeddings.vectors)
                context.warn(f"{unit.stem}: {failed[split]} {split} image(s) could not be embedded and are left out "
                             f"of the probe (first: {first}: {context.embeddings.errors.get(first, 'not embedded')})")
            return (None, None) if x is None else (x, np.array([task.label_vector(r) for r in rows]))

        train_patients = len({r.patient_id or r.image_id for r in context.records(unit, "train")})
        tx, ty = xy("train")
        if tx is None:
            raise FocusError(f"task {task.name}: no train images could be embedded")
        vx, vy = xy("val")
        o = context.options
        options = dict(compat=o.probe_compat, seed=o.seed, select=o.probe_select)
        if task.multilabel:
            if others:
                raise FocusError(f"task {task.name}: a multi-label probe scores test rows only")
            result = fit_predict_multilabel(tx, ty, vx, vy, x_test, **options)
        else:
            result = fit_predict(tx, ty, vx, vy, x_test, n_classes=task.n_classes,
                                 also=tuple(xs[split] for split in others), **options)
        extra = {**result.info, "n_train": int(len(ty)), "n_train_patients": train_patients,
                 "n_val": 0 if vy is None else int(len(vy)),
                 "n_errors_train": failed["train"], "n_errors_val": failed["val"]}
        out = {"test": ((result.scores if task.binary else result.probs), result.preds)}
        for split, probs in zip(others, result.also):
            out[split] = (probs[:, 1] if task.binary else probs), probs.argmax(axis=1)
        return out, extra
