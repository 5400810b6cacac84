"""focus-eval: evaluation harness for retinal colour-fundus models (the FOCUS benchmark)."""

from focus_eval.version import __version__  # noqa: F401


def evaluate(model: str, tasks, **options):
    """Evaluate a model preset on tasks and return the results lines (see ``focus_eval.api.evaluate``)."""
    from focus_eval.api import evaluate as _evaluate

    return _evaluate(model, tasks, **options)


def load_results(*paths, include_limited: bool = False, prefer=None):
    """Results lines under ``paths`` as a pandas DataFrame (see ``focus_eval.notebook.load_results``)."""
    from focus_eval.notebook import load_results as _load_results

    return _load_results(*paths, include_limited=include_limited, prefer=prefer)


def load_samples(path, task: str, method: str | None = None, model: str | None = None,
                 include_limited: bool = False):
    """One unit's sample lines as a pandas DataFrame (see ``focus_eval.notebook.load_samples``)."""
    from focus_eval.notebook import load_samples as _load_samples

    return _load_samples(path, task, method=method, model=model, include_limited=include_limited)
