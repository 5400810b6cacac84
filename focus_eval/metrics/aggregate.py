"""Group scores: the macro mean over a group's member tasks of each metric, per (model, method, adapter).

Every member task weighs the same whatever its size. Proxy tasks and underpowered tasks (flagged by scoring by
the rule of ``results.power``) are left out unless asked for; a metric that is None for a task is left out of that metric's mean,
and ``coverage`` says how many tasks each mean covers.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from focus_eval.results.schema import METRICS, ResultLine


def _as_dict(result: ResultLine | dict[str, Any]) -> dict[str, Any]:
    return result.to_dict() if isinstance(result, ResultLine) else result


def _members(group: Any) -> tuple[str, list[str]]:
    if hasattr(group, "tasks"):
        return group.name, list(group.tasks)
    names = list(group)
    return ",".join(names), names


def aggregate_group(results: Iterable[ResultLine | dict[str, Any]], group: Any, include_proxy: bool = False,
                    include_underpowered: bool = False, metrics: Sequence[str] = METRICS) -> dict[str, Any]:
    """``group`` is a task Group (``.name``, ``.tasks``) or a list of task names. Returns
    {group, aggregation, include_proxy, include_underpowered, rows: [{model, method, adapter, tasks, excluded,
    missing, metrics, coverage}]}, one row per (model, method, adapter) that has any member task."""
    name, members = _members(group)
    units: dict[tuple, dict[str, dict[str, Any]]] = {}
    for result in map(_as_dict, results):
        if result["task"] not in members:
            continue
        key = (result["model"], result["method"], result.get("adapter"))
        per_task = units.setdefault(key, {})
        if result["task"] in per_task:
            raise ValueError(f"two results for task {result['task']} of {key}; aggregate one results set at a time")
        per_task[result["task"]] = result
    rows = []
    for (model, method, adapter), per_task in sorted(units.items(), key=lambda kv: tuple(map(str, kv[0]))):
        used, excluded = [], {}
        for task in members:
            result = per_task.get(task)
            if result is None:
                continue
            if result.get("proxy") and not include_proxy:
                excluded[task] = "proxy"
            elif result.get("underpowered") and not include_underpowered:
                excluded[task] = "underpowered"
            else:
                used.append(result)
        means, coverage = {}, {}
        for metric in metrics:
            values = [r["metrics"].get(metric) for r in used if r["metrics"].get(metric) is not None]
            means[metric] = sum(values) / len(values) if values else None
            coverage[metric] = len(values)
        rows.append({"model": model, "method": method, "adapter": adapter, "tasks": [r["task"] for r in used],
                     "excluded": excluded, "missing": [t for t in members if t not in per_task],
                     "metrics": means, "coverage": coverage})
    return {"group": name, "aggregation": "macro_mean", "include_proxy": include_proxy,
            "include_underpowered": include_underpowered, "rows": rows}
