"""Operating points of a binary score: a threshold chosen by a rule on one set of images, and the sensitivity,
specificity, PPV and NPV it gives on another (a row is called positive when its score is at or above the
threshold), for every row of a resample weight matrix at once; and recalibration maps fitted on one set
(temperature and Platt scaling of the score's logit)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize, minimize_scalar
from scipy.special import expit as sigmoid  # noqa: F401 (the inverse of logit, for callers)

EPS = 1e-6
# temperatures searched: 0.01 to 100 (separable validation rows would drive T to 0)
LOG_T_BOUNDS = (float(np.log(0.01)), float(np.log(100.0)))


@dataclass(frozen=True)
class Rule:
    """How a threshold is chosen: ``youden`` (largest sensitivity + specificity - 1), or the most specific
    threshold whose sensitivity is at least ``target`` (``sensitivity``), or the most sensitive one whose
    specificity is at least ``target`` (``specificity``)."""

    kind: str
    target: float | None = None

    @property
    def name(self) -> str:
        return self.kind if self.target is None else f"{self.kind}>={self.target:g}"


def _curve(y: np.ndarray, score: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(thresholds, sensitivity, specificity) from the highest threshold down: +inf (no row positive) first,
    then every distinct score; sensitivity rises and specificity falls along them."""
    y = np.asarray(y, dtype=bool)
    thresholds = np.unique(score)[::-1]
    pos, neg = np.sort(score[y]), np.sort(score[~y])
    sens = (pos.size - np.searchsorted(pos, thresholds, side="left")) / pos.size
    spec = np.searchsorted(neg, thresholds, side="left") / neg.size
    return np.concatenate([[np.inf], thresholds]), np.concatenate([[0.0], sens]), np.concatenate([[1.0], spec])


def choose_threshold(y: np.ndarray, score: np.ndarray, rule: Rule) -> float | None:
    """The rule's threshold on (y, score); None without both classes or when no threshold meets the target."""
    y, score = np.asarray(y, dtype=float), np.asarray(score, dtype=float)
    if not (y == 1).any() or not (y == 0).any():
        return None
    thresholds, sens, spec = _curve(y, score)
    if rule.kind == "youden":
        return float(thresholds[int(np.argmax(sens + spec - 1.0))])  # the highest threshold of the best
    if rule.kind == "sensitivity":
        ok = np.flatnonzero(sens >= rule.target)
        return float(thresholds[ok[0]]) if ok.size else None  # the highest threshold that reaches it
    if rule.kind == "specificity":
        ok = np.flatnonzero((spec >= rule.target) & np.isfinite(thresholds))
        return float(thresholds[ok[-1]]) if ok.size else None  # the lowest threshold that keeps it
    raise ValueError(f"unknown threshold rule {rule.kind!r}")


def rates_batch(y: np.ndarray, score: np.ndarray, threshold: float, weights: np.ndarray) -> dict[str, np.ndarray]:
    """Sensitivity, specificity, PPV and NPV at ``threshold`` for each row of ``weights`` (NaN where undefined)."""
    y = np.asarray(y, dtype=float)
    positive = (np.asarray(score, dtype=float) >= threshold).astype(float)
    tp, fn = weights @ (y * positive), weights @ (y * (1 - positive))
    tn, fp = weights @ ((1 - y) * (1 - positive)), weights @ ((1 - y) * positive)

    def ratio(a, b):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(a + b > 0, a / np.where(a + b > 0, a + b, 1.0), np.nan)

    return {"sensitivity": ratio(tp, fn), "specificity": ratio(tn, fp), "ppv": ratio(tp, fp), "npv": ratio(tn, fn)}


def logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=float), EPS, 1 - EPS)
    return np.log(p) - np.log1p(-p)


def _nll(z: np.ndarray, y: np.ndarray) -> float:
    """Mean negative log-likelihood of labels ``y`` under P(positive) = sigmoid(z)."""
    return float(np.mean(np.logaddexp(0.0, z) - y * z))


def fit_temperature(y: np.ndarray, p: np.ndarray) -> float:
    """The temperature T > 0 that minimises the log loss of sigmoid(logit(p) / T) on (y, p)."""
    z, y = logit(p), np.asarray(y, dtype=float)
    best = minimize_scalar(lambda log_t: _nll(z / np.exp(log_t), y), bounds=LOG_T_BOUNDS, method="bounded",
                           options={"xatol": 1e-8})
    return float(np.exp(best.x))


def fit_platt(y: np.ndarray, p: np.ndarray) -> tuple[float, float]:
    """(a, b) minimising the log loss of sigmoid(a * logit(p) + b) on (y, p) (Platt scaling)."""
    z, y = logit(p), np.asarray(y, dtype=float)
    best = minimize(lambda ab: _nll(ab[0] * z + ab[1], y), x0=np.array([1.0, 0.0]), method="BFGS")
    return float(best.x[0]), float(best.x[1])


def temperature_logit(p: np.ndarray, temperature: float) -> np.ndarray:
    """The log-odds of temperature-scaled ``p``: logit(p) / T."""
    return logit(p) / temperature


def platt_logit(p: np.ndarray, a: float, b: float) -> np.ndarray:
    """The log-odds of Platt-scaled ``p``: a logit(p) + b."""
    return a * logit(p) + b
