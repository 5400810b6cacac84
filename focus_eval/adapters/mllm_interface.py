"""What a multimodal LLM adapter provides: the calls the prompt methods and ``focus-eval serve`` make on it,
declared once. ``HFMLLMAdapter`` (a local model through transformers) and ``OpenAIChatAdapter`` (a model
behind an OpenAI-compatible endpoint, vLLM included) both satisfy ``MLLMAdapter``; a new family does too when
it has these attributes and methods with these signatures (``tests/adapters/test_mllm_interface.py`` checks
every registered ``mllm`` adapter).

Shapes. An *image* is a decoded PIL image, or, for an adapter with ``WorkerImages``, one row of an
``ImageBatch`` its loader workers processed. ``prompts_per_image[i]`` is the list of prompts asked of image
``i`` (possibly empty); answers come back in the same nesting: one list per image, one dict per prompt. An
image the adapter could not answer gets, instead of its list, a list with an ``error`` attribute (a
``FailedAnswers``) and the image is failed with that reason. A reason that starts with ``RETRYABLE``
(:func:`mark_retryable`) says the failure was transient (the endpoint was down, overloaded or too slow): the
unit is then not finished, and the next run of the same command asks that image again.

Answer dicts. A yes/no answer: ``p_yes`` and ``p_no`` (first-token probabilities of the best "yes" and "no"
variants, None where the model gave none), ``score_norm`` (``p_yes / (p_yes + p_no)``) and ``text`` (the
greedy answer). A multiple-choice answer: ``letters`` (option letter -> share of the first-token probability
over the question's letters), ``letter_mass`` (the probability the letters held before renormalising) and
``text``. An adapter may add fields (``scored_by``); the methods read only these.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence, runtime_checkable

#: the start of a failure reason that a later run may retry (a sample line's ``error``)
RETRYABLE = "retryable: "


def mark_retryable(reason: str) -> str:
    """``reason`` marked as a transient failure: the image is asked again by the next run."""
    return reason if reason.startswith(RETRYABLE) else RETRYABLE + reason


def is_retryable(error: object) -> bool:
    """Whether a sample line's ``error`` is a transient failure (marked by :func:`mark_retryable`)."""
    return isinstance(error, str) and error.startswith(RETRYABLE)


@runtime_checkable
class MLLMAdapter(Protocol):
    """The calls the ``prompt``, ``multiple_choice`` and ``knowledge_prompt`` methods make on a loaded MLLM.

    ``max_new_tokens`` is the preset's greedy answer length (the methods pass it, or a longer one, to every
    call); ``device`` is where the model runs (``"cpu"`` for a remote one): batches bound for a CUDA device
    are pinned."""

    max_new_tokens: int
    device: Any

    def score_and_generate_multi(self, images: Sequence, prompts_per_image: Sequence[Sequence[str]],
                                 max_new_tokens: int | None = None) -> list[list[dict[str, Any]]]:
        """Yes/no questions, several per image, in one batched call (each image encoded once where the model
        allows): per image, per prompt, the yes/no answer dict (``p_yes``, ``p_no``, ``score_norm``,
        ``text``), the text at most ``max_new_tokens`` tokens (None: ``self.max_new_tokens``). Called by the
        ``prompt`` method (``runner.methods.prompt.answer_images``), the MLLM benchmark and ``serve``."""
        ...

    def score_options_and_generate_multi(self, images: Sequence, prompts_per_image: Sequence[Sequence[str]],
                                         letters_per_prompt: Sequence[Sequence[Sequence[str]]],
                                         max_new_tokens: int | None = None) -> list[list[dict[str, Any]]]:
        """Multiple-choice questions, several per image: ``letters_per_prompt[i][j]`` are the option letters
        of question ``prompts_per_image[i][j]``; per image, per question, the multiple-choice answer dict
        (``letters``, ``letter_mass``, ``text``). Called by the ``multiple_choice`` method."""
        ...

    def score_options_and_generate_text(self, prompts: Sequence[str], letters_per_prompt: Sequence[Sequence[str]],
                                        max_new_tokens: int | None = None) -> list[dict[str, Any]]:
        """Multiple-choice questions with no image (text-only user turns), one flat list: per question the
        multiple-choice answer dict. A question that cannot be answered is a FocusError (the unit fails).
        Called by the ``knowledge_prompt`` method."""
        ...


@runtime_checkable
class WorkerImages(Protocol):
    """An MLLM whose processor's image half runs in DataLoader workers (optional: without it the workers only
    decode, and the adapter processes the images itself). The ``prompt`` methods use it when present."""

    def image_processing(self) -> Any:
        """A picklable callable, image -> processed image row (``mllm_images.ImageProcessing``), run in the
        loader workers; their rows are joined into an ``ImageBatch``."""
        ...

    def place_images(self, batch: Any) -> Any:
        """The ``ImageBatch`` on the model's device (asynchronously from pinned memory), before the model call."""
        ...


@runtime_checkable
class VisionFeatures(Protocol):
    """An MLLM whose vision tower serves as an image encoder (optional: the ``ve_probe`` method needs it, and a
    model without it has its ``ve_probe`` units failed with the reason)."""

    def image_encoder(self) -> Any:
        """An ``EncoderAdapter`` over the vision tower (``mllm_vision.MLLMVisionEncoder``): ``embed_images``
        gives one pooled vector per image, ``architecture`` and ``pooling`` name the tower and the pooling.
        Called by the runner's embedding stage and ``ve_probe``."""
        ...


@runtime_checkable
class ServedMLLM(MLLMAdapter, Protocol):
    """What ``focus-eval serve`` (``adapters.openai_server``) needs besides ``MLLMAdapter``: the first-token
    logits themselves, for the top log-probabilities of a chat completion. A local model only."""

    tokenizer: Any  # decodes the token ids of the top log-probabilities

    def score_and_generate_multi(self, images: Sequence, prompts_per_image: Sequence[Sequence[str]],
                                 max_new_tokens: int | None = None, scores=None) -> list[list[dict[str, Any]]]:
        """As ``MLLMAdapter.score_and_generate_multi``; ``scores(logits)`` (rows x vocabulary, first token)
        returns the dict of each row in place of the yes/no fields, ``text`` still added."""
        ...

    def score_text_and_generate(self, prompts: Sequence[str], max_new_tokens: int | None = None,
                                scores=None) -> list[dict[str, Any]]:
        """Text-only user turns (no image), one flat list: per prompt the yes/no answer dict, or ``scores``'
        dict as above, and the greedy ``text``. Called by ``serve`` for requests without an image."""
        ...


def missing_members(cls: type, protocol: type = MLLMAdapter) -> list[str]:
    """The methods of ``protocol`` that ``cls`` lacks or declares with other parameters, one line each (empty:
    ``cls`` provides the interface). Parameters are compared by name and kind, in order; ``cls`` may add
    parameters after them when they have defaults."""
    import inspect

    problems = []
    for name in _methods(protocol):
        found = getattr(cls, name, None)
        if not callable(found):
            problems.append(f"{cls.__name__} has no method {name}")
            continue
        wanted = list(inspect.signature(getattr(protocol, name)).parameters.values())
        have = list(inspect.signature(found).parameters.values())
        same = [(p.name, p.kind) for p in have[:len(wanted)]] == [(p.name, p.kind) for p in wanted]
        extra_ok = all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                       for p in have[len(wanted):])
        if not (same and extra_ok):
            problems.append(f"{cls.__name__}.{name}{inspect.signature(found)} does not match "
                            f"{protocol.__name__}.{name}{inspect.signature(getattr(protocol, name))}")
    return problems


def _methods(protocol: type) -> list[str]:
    """The methods a protocol declares, its bases' included."""
    names = []
    for base in reversed(protocol.__mro__):
        if base is Protocol or base is object or not getattr(base, "_is_protocol", False):
            continue
        names += [k for k, v in vars(base).items() if callable(v) and not k.startswith("_") and k not in names]
    return names
