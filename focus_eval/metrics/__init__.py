"""Metrics: plain functions over numpy arrays (core, fairness, robustness, bootstrap) and the evaluation of
sample lines into a results line (evaluate)."""
