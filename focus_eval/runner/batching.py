"""``--batch-size auto``: start from a large batch and, when the accelerator runs out of memory, split the
batch in halves and keep the smaller size for the rest of the run."""

from __future__ import annotations

from typing import Any, Callable, Sequence


def is_out_of_memory(exc: BaseException) -> bool:
    import torch

    return isinstance(exc, torch.cuda.OutOfMemoryError) or (
        isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower())


class MemoryAdaptiveBatches:
    """Runs a batch function on chunks no larger than the largest size that has fitted so far."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.max_rows: int | None = None

    def run(self, fn: Callable[..., Any], columns: Sequence[Sequence[Any]], join: Callable[[list], Any]) -> Any:
        """``fn(*[column[a:b] for column in columns])`` over all rows, joined with ``join``."""
        n = len(columns[0])
        size = n if self.max_rows is None else min(n, self.max_rows)
        parts, start = [], 0
        while start < n:
            stop = min(n, start + size)
            try:
                parts.append(fn(*[column[start:stop] for column in columns]))
                start = stop
            except Exception as exc:  # noqa: BLE001 - only out-of-memory errors are handled, the rest re-raised
                if not self.enabled or not is_out_of_memory(exc) or size == 1:
                    raise
                import torch

                torch.cuda.empty_cache()
                size = max(1, size // 2)
                self.max_rows = size
        return join(parts)


def join_lists(parts: list[list]) -> list:
    return [x for part in parts for x in part]
