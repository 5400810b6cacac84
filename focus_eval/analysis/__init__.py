"""The analyses over collected results: FunBench module attribution, the fine-tuning comparison summary, the
paper's summary columns, the statistics the pages state, and the paired statistics over sample files (rank
intervals, pairwise AUROC differences, operating points at pre-specified thresholds, recalibration), and the
agreement of submitters on one configuration. Each analysis is one module with an ``ANALYSIS``
object (``analysis.base.Analysis``), registered here by name and imported on first use; ``focus-eval report
NAME`` is the one door to them, and the leaderboard draws its pages from the same objects."""

from __future__ import annotations

from focus_eval.registry import Registry


def _builtin() -> None:
    ANALYSES.register("funbench", "focus_eval.analysis.funbench_report:ANALYSIS")
    ANALYSES.register("finetune", "focus_eval.analysis.deltas:ANALYSIS")
    ANALYSES.register("ranks", "focus_eval.analysis.ranks:ANALYSIS")
    ANALYSES.register("pairwise", "focus_eval.analysis.pairwise:ANALYSIS")
    ANALYSES.register("operating-points", "focus_eval.analysis.operating_points:ANALYSIS")
    ANALYSES.register("recalibration", "focus_eval.analysis.recalibration:ANALYSIS")
    for name, attr in (("domain-gap", "DOMAIN_GAP"), ("domain-gap-pooled", "DOMAIN_GAP_POOLED"),
                       ("fairness-calibration", "FAIRNESS_CALIBRATION"), ("specialisation", "SPECIALISATION"),
                       ("zero-shot-probe", "ZERO_SHOT_PROBE"), ("interfaces", "INTERFACES_VIEW"),
                       ("reliability", "RELIABILITY_VIEW")):
        ANALYSES.register(name, f"focus_eval.analysis.focus_figures:{attr}")
    ANALYSES.register("prompt-sensitivity", "focus_eval.analysis.prompt_sensitivity:ANALYSIS")
    ANALYSES.register("corruptions", "focus_eval.analysis.corruptions:ANALYSIS")
    ANALYSES.register("label-efficiency", "focus_eval.analysis.label_efficiency:ANALYSIS")
    ANALYSES.register("label-rule-sensitivity", "focus_eval.analysis.label_rules:ANALYSIS")
    ANALYSES.register("agreement", "focus_eval.analysis.agreement:ANALYSIS")


ANALYSES = Registry("analysis", entry_point_group="focus_eval.analyses", builtin=_builtin)

__all__ = ["ANALYSES"]
