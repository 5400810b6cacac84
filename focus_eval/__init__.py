"""focus-eval: evaluation harness for retinal colour-fundus models (the FOCUS benchmark)."""

from focus_eval.version import __version__  # noqa: F401


def evaluate(model: str, tasks, **options):
    """Evaluate a model preset on tasks and return the results lines (see ``focus_eval.api.evaluate``)."""
    from focus_eval.api import evaluate as _evaluate

    return _evaluate(model, tasks, **options)
