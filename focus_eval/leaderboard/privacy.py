"""Metrics-only publishing (``focus-eval leaderboard --no-samples``): a private site reads no per-image file,
and the results lines it publishes keep counts where they listed image or patient ids."""

from __future__ import annotations

from typing import Any

# keys whose values name individual images or patients
ID_KEYS = frozenset({"image_id", "patient_id", "image_ids", "patient_ids", "first"})


def metrics_only(value: Any) -> Any:
    """``value`` without per-image or per-patient ids: an id summary ``{"count": n, "first": [...]}`` (how a
    run records the ids behind a split warning) becomes its count, and any other id-valued key is dropped."""
    if isinstance(value, dict):
        if "first" in value and "count" in value:
            return value["count"]
        return {k: metrics_only(v) for k, v in value.items() if k not in ID_KEYS}
    if isinstance(value, list):
        return [metrics_only(v) for v in value]
    return value
