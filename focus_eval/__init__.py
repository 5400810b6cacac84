"""focus-eval: evaluation harness for retinal colour-fundus models (the FOCUS benchmark)."""

__version__ = "0.1.0"
