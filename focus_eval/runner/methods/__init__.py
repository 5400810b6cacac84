"""Scoring methods, peers behind one small interface (``base.Method``) and one registry. A new method is one
module with a ``Method`` subclass plus one line here (or ``register_method`` from outside the package, or an
entry point in the ``focus_eval.methods`` group)."""

from __future__ import annotations

from focus_eval.registry import Registry

METHODS = Registry("method", entry_point_group="focus_eval.methods")
METHODS.register("linear_probe", "focus_eval.runner.methods.linear_probe:LinearProbe")
METHODS.register("zero_shot", "focus_eval.runner.methods.zero_shot:ZeroShot")
METHODS.register("prompt", "focus_eval.runner.methods.prompt:PromptMethod")
METHODS.register("multiple_choice", "focus_eval.runner.methods.multiple_choice:MultipleChoice")
METHODS.register("ve_probe", "focus_eval.runner.methods.ve_probe:VisionEncoderProbe")
METHODS.register("knowledge_prompt", "focus_eval.runner.methods.knowledge_prompt:KnowledgePrompt")


def register_method(name: str, target) -> None:
    """Add a method: ``target`` is a ``Method`` subclass or ``"module:Class"``."""
    METHODS.register(name, target)


def get_method(name: str):
    """An instance of the method registered under ``name``."""
    return METHODS.get(name)()
