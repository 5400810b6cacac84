"""Multimodal LLM adapter: first-token yes/no scores and short greedy answers from image-text-to-text models.

The user turn is [image, task prompt], with no system prompt, rendered by the model's own chat template with
the generation prompt appended. One batched, left-padded prefill gives the first-token distribution (softmax of
the last position's logits); ``p_yes`` is the largest probability among the single-token variants of "yes"
("yes", "Yes", with a leading space or newline), ``p_no`` likewise, and ``score_norm = p_yes / (p_yes + p_no)``.
The runner owns batching and devices; this module turns one batch of (image, prompt) rows into numbers.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import torch

from focus_eval.adapters import checkpoints
from focus_eval.adapters.base import PresetAdapter
from focus_eval.adapters.hub import advice, offline, offline_missing
from focus_eval.adapters.lora import load_lora
from focus_eval.adapters.mllm_images import ImageBatch, ImageProcessing, collate
from focus_eval.adapters.mllm_parse import NO_WORDS, YES_WORDS, parse_yes_no, single_token_variants
from focus_eval.adapters.mllm_prefix import greedy_continue, plan_shared_prefix, run_shared_prefix
from focus_eval.errors import FocusError

__all__ = ["MLLMScorer", "HFMLLMAdapter", "parse_yes_no"]

DEFAULT_MAX_NEW_TOKENS = 5
# Encoder outputs the language model reads; everything else in a vision-tower output is per patch, not per image.
_IMAGE_FEATURE_FIELDS = ("pooler_output", "deepstack_features")
_TEXT_KEYS = ("input_ids", "attention_mask", "token_type_ids", "mm_token_type_ids")


class MLLMScorer:
    """Yes/no scoring and greedy answers over a loaded model and its processor (no loading, no batching policy)."""

    #: greedy answer length when a call gives none
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS

    def __init__(self, model, processor, device: str | torch.device = "cpu", dtype: torch.dtype | None = None,
                 max_visual_tokens: int | None = None, share_prefix: bool = True):
        self.model = model.eval()
        self.max_visual_tokens = max_visual_tokens
        # several prompts on one image: prefill the image's shared prefix once (see mllm_prefix)
        self.share_prefix = share_prefix
        self.processor = processor
        self.tokenizer = processor.tokenizer
        # Left padding keeps every row's last prompt token in the last column, where the next-token logits are read.
        self.tokenizer.padding_side = "left"
        self.device = torch.device(device)
        self.dtype = dtype or next(model.parameters()).dtype
        self.answer_variants = {"yes": single_token_variants(self.tokenizer, YES_WORDS),
                                "no": single_token_variants(self.tokenizer, NO_WORDS)}
        for word, found in self.answer_variants.items():
            if not found:
                raise FocusError(f"the tokenizer has no single-token variant of {word!r}; yes/no scoring needs one")
        self.yes_ids = sorted(set(self.answer_variants["yes"].values()))
        self.no_ids = sorted(set(self.answer_variants["no"].values()))
        if set(self.yes_ids) & set(self.no_ids):
            raise FocusError("the tokenizer maps a yes variant and a no variant to the same token")
        self._chat_texts: dict[str, str] = {}
        self._pad_id = _pad_token_id(self.tokenizer, model)
        eos = model.generation_config.eos_token_id
        self._eos_ids = set(eos if isinstance(eos, (list, tuple)) else [] if eos is None else [eos])

    # ----- inputs

    def chat_text(self, prompt: str, image: bool = True) -> str:
        """The chat-template rendering of one user turn [image, prompt] (``image`` False: [prompt] alone)
        followed by the generation prompt."""
        key = (prompt, image)
        if key not in self._chat_texts:
            if len(self._chat_texts) > 4096:  # prompts rendered per record must not grow this without bound
                self._chat_texts.clear()
            content = ([{"type": "image"}] if image else []) + [{"type": "text", "text": prompt}]
            self._chat_texts[key] = self.processor.apply_chat_template(
                [{"role": "user", "content": content}], add_generation_prompt=True, tokenize=False)
        return self._chat_texts[key]

    def encode_text(self, prompts: Sequence[str]) -> dict[str, Any]:
        """Token rows of text-only user turns (no image placeholder, no pixels), left-padded, on the device."""
        texts = [self.chat_text(p, image=False) for p in prompts]
        # the chat template already wrote the special tokens (BOS included)
        batch = self.tokenizer(texts, padding=True, return_tensors="pt", add_special_tokens=False,
                               return_token_type_ids=False)
        return self._place({"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]})

    def encode(self, images: Sequence | ImageBatch, prompts: Sequence[str], with_pixels: bool = True) -> dict[str, Any]:
        """Processor outputs for one batch of (image, prompt) rows, left-padded and placed on the device.
        ``images`` may come processed already (an ``ImageBatch`` from loader workers)."""
        if len(images) != len(prompts):
            raise FocusError(f"{len(images)} images but {len(prompts)} prompts")
        if isinstance(images, ImageBatch):
            pixels, rows = self.encode_shared(images, range(len(images)), prompts)
            return {**pixels, **rows} if with_pixels else rows
        batch = self._process(images, prompts)
        if not with_pixels:
            batch = {k: v for k, v in batch.items() if not k.startswith("pixel_values")}
        return self._place(batch)

    def _process(self, images: Sequence, prompts: Sequence[str], **kwargs: Any) -> dict[str, Any]:
        texts = [self.chat_text(p) for p in prompts]
        # The chat template already wrote the special tokens (BOS included); adding them again would double BOS.
        batch = self.processor(images=[[image] for image in images], text=texts, padding=True,
                               return_tensors="pt", add_special_tokens=False, **kwargs)
        return self._check_visual_tokens(dict(batch))

    def _check_visual_tokens(self, batch: dict[str, Any]) -> dict[str, Any]:
        """Enforce the preset's visual-token budget on what the processor actually produced."""
        token = getattr(self.processor, "image_token_id", None)
        if self.max_visual_tokens and token is not None and "input_ids" in batch:
            most = int((batch["input_ids"] == token).sum(dim=1).max())
            if most > self.max_visual_tokens:
                raise FocusError(f"an image became {most} visual tokens, over the preset's budget of "
                                 f"{self.max_visual_tokens} (max_visual_tokens); lower the processor's pixel budget")
        return batch

    def _place(self, batch: dict[str, Any]) -> dict[str, Any]:
        placed = {}
        for key, value in batch.items():
            if torch.is_tensor(value):
                value = value.to(self.device, dtype=self.dtype if value.is_floating_point() else None)
            placed[key] = value
        return placed

    def image_processing(self) -> ImageProcessing:
        """The picklable image half of the processor, for DataLoader workers (see ``mllm_images``)."""
        # rows are rebuilt from placeholder texts only where that reproduces the processor's own rows
        return ImageProcessing(self.processor, self.chat_text(""), self.dtype,
                               keep_images=self._row_layout() is None)

    def process_images(self, images: Sequence | ImageBatch) -> ImageBatch:
        """Images through the image half of the processor, here in this thread (as is, when already done)."""
        if isinstance(images, ImageBatch):
            return images
        work = self.image_processing()
        return collate([work(image) for image in images])

    def place_images(self, batch: ImageBatch) -> ImageBatch:
        """The batch on the model's device (asynchronously from pinned memory); a placed batch is kept."""
        if all(v.device == self.device for v in batch.tensors.values()):
            return batch
        return batch.to(self.device, self.dtype)

    def _with_positions(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Add the position ids that ``generate`` would use: counted from each row's first real token."""
        inputs = dict(inputs)
        # The model's own rule (2D for most models, multimodal 3D for Qwen3-VL), so a prefill here and the first
        # step of generate() see identical positions under left padding.
        inputs["position_ids"] = self.model._prepare_position_ids_for_generation(inputs["input_ids"], dict(inputs))
        return inputs

    # ----- primitives

    @torch.inference_mode()
    def first_token_logits(self, inputs: dict[str, Any], encoder_outputs=None) -> torch.Tensor:
        """Next-token logits at the last position of every row (float32, rows x vocabulary)."""
        kwargs = self._with_positions(inputs)
        if encoder_outputs is not None:
            kwargs["mm_encoder_outputs"] = {"image": encoder_outputs}
        out = self.model(**kwargs, use_cache=False, logits_to_keep=1)
        return out.logits[:, -1, :].float()

    def answer_scores(self, logits: torch.Tensor) -> list[dict[str, float]]:
        """p_yes, p_no and score_norm from next-token logits (rows x vocabulary)."""
        logits = logits.float()
        probs = torch.softmax(logits, dim=-1)
        yes = torch.tensor(self.yes_ids, device=logits.device)
        no = torch.tensor(self.no_ids, device=logits.device)
        p_yes = probs.index_select(1, yes).max(dim=1).values
        p_no = probs.index_select(1, no).max(dim=1).values
        # p_yes / (p_yes + p_no) written with logits: exact, and defined even when both probabilities underflow.
        best_yes = logits.index_select(1, yes).max(dim=1).values
        best_no = logits.index_select(1, no).max(dim=1).values
        norm = torch.sigmoid(best_yes - best_no)
        return [{"p_yes": float(a), "p_no": float(b), "score_norm": float(c)}
                for a, b, c in zip(p_yes.tolist(), p_no.tolist(), norm.tolist())]

    def score_yes_no(self, images: Sequence, prompts: Sequence[str]) -> list[dict[str, float]]:
        """One batched prefill; per row: ``{"p_yes", "p_no", "score_norm"}``."""
        if not len(images):
            return []
        return self.answer_scores(self.first_token_logits(self.encode(images, prompts)))

    def generate(self, images: Sequence, prompts: Sequence[str], max_new_tokens: int | None = None) -> list[str]:
        """Greedy answers (a few tokens), batched and left-padded; special tokens removed."""
        return [row["text"] for row in self.score_and_generate(images, prompts, max_new_tokens)]

    def score_and_generate(self, images: Sequence, prompts: Sequence[str],
                           max_new_tokens: int | None = None) -> list[dict[str, Any]]:
        """Scores and greedy text from one prefill: the first decoding step's logits are the first-token
        distribution. Per row: ``{"p_yes", "p_no", "score_norm", "text"}``; at most ``max_new_tokens`` tokens
        (default ``self.max_new_tokens``)."""
        if not len(images):
            return []
        return self._decode(self.encode(images, prompts), self._answer_length(max_new_tokens))

    def score_yes_no_multi(self, images: Sequence, prompts_per_image: Sequence[Sequence[str]]
                           ) -> list[list[dict[str, float]]]:
        """Several prompts per image, each image encoded once: its vision tower pass and, where the model
        allows, the prefill of its shared prefix serve all of its prompts. Same numbers as ``score_yes_no``."""
        batch = self._multi_batch(images, prompts_per_image)
        if batch is None:
            return [[] for _ in images]
        plan = self._prefix_plan(batch, max_new_tokens=0)
        if plan is None:
            logits = self.first_token_logits(batch.rows, _select_images(batch.features, batch.slots))
        else:
            logits, _ = run_shared_prefix(self.model, plan, _select_images(batch.features, range(batch.n_images)))
        return _unflatten(self.answer_scores(logits), batch.shape)

    def score_and_generate_multi(self, images: Sequence, prompts_per_image: Sequence[Sequence[str]],
                                 max_new_tokens: int | None = None, scores=None) -> list[list[dict[str, Any]]]:
        """``score_and_generate`` for several prompts per image, each image encoded once. ``scores`` turns the
        first-token logits (rows x vocabulary) into one dict per row (default: ``answer_scores``)."""
        batch = self._multi_batch(images, prompts_per_image)
        if batch is None:
            return [[] for _ in images]
        max_new_tokens = self._answer_length(max_new_tokens)
        plan = self._prefix_plan(batch, max_new_tokens)
        if plan is None:
            rows = self._decode(batch.rows, max_new_tokens, _select_images(batch.features, batch.slots), scores)
            return _unflatten(rows, batch.shape)
        logits, cache = run_shared_prefix(self.model, plan, _select_images(batch.features, range(batch.n_images)))
        tokens = greedy_continue(self.model, logits, cache, plan.total_mask, plan.suffix_positions, max_new_tokens,
                                 self._eos_ids, self._pad_id)
        rows = (scores or self.answer_scores)(logits)
        for row, text in zip(rows, self.tokenizer.batch_decode(tokens, skip_special_tokens=True)):
            row["text"] = text
        return _unflatten(rows, batch.shape)

    def letter_scores(self, logits: torch.Tensor, letters_per_row: Sequence[Sequence[str]]) -> list[dict[str, Any]]:
        """Per row, the first-token distribution over that row's option letters: each letter's largest
        probability among its single-token variants ("A", " A", "\nA"), renormalised over the row's letters
        (``letters``), and the probability mass the letters hold before renormalising (``letter_mass``)."""
        logits = logits.float()
        probs = torch.softmax(logits, dim=-1)
        rows = []
        for row, letters in enumerate(letters_per_row):
            ids = [self._letter_ids(letter) for letter in letters]
            best = torch.stack([logits[row, i].max() for i in ids])
            mass = sum(float(probs[row, i].max()) for i in ids)
            share = torch.softmax(best, dim=0).tolist()  # written with logits: defined even when all underflow
            rows.append({"letters": dict(zip(letters, share)), "letter_mass": mass})
        return rows

    def _letter_ids(self, letter: str) -> torch.Tensor:
        cache = self.__dict__.setdefault("_letter_cache", {})
        if letter not in cache:
            found = sorted(set(single_token_variants(self.tokenizer, (letter,)).values()))
            if not found:
                raise FocusError(f"the tokenizer has no single-token variant of the option letter {letter!r}")
            cache[letter] = torch.tensor(found, device=self.device)
        return cache[letter]

    def score_options_and_generate_multi(self, images: Sequence, prompts_per_image: Sequence[Sequence[str]],
                                         letters_per_prompt: Sequence[Sequence[Sequence[str]]],
                                         max_new_tokens: int | None = None) -> list[list[dict[str, Any]]]:
        """Multiple-choice questions, several per image, each image encoded once: per question the first-token
        distribution over its option letters (``letter_scores``) and the greedy answer text, from the same
        batched prefill as ``score_and_generate_multi``."""
        # one entry per row, in the order the rows are built (images without prompts have none)
        flat = [row for prompts, rows in zip(prompts_per_image, letters_per_prompt) if prompts for row in rows]
        return self.score_and_generate_multi(images, prompts_per_image, max_new_tokens,
                                             scores=lambda logits: self.letter_scores(logits, flat))

    def score_options_and_generate_text(self, prompts: Sequence[str], letters_per_prompt: Sequence[Sequence[str]],
                                        max_new_tokens: int | None = None) -> list[dict[str, Any]]:
        """Multiple-choice questions asked with no image (text-only user turns), one batched prefill: per
        question the first-token distribution over its option letters (``letter_scores``) and the greedy
        answer text, as ``score_options_and_generate_multi`` gives them for questions on images."""
        letters = list(letters_per_prompt)
        return self.score_text_and_generate(prompts, max_new_tokens,
                                            scores=lambda logits: self.letter_scores(logits, letters))

    def score_text_and_generate(self, prompts: Sequence[str], max_new_tokens: int | None = None,
                                scores=None) -> list[dict[str, Any]]:
        """Text-only user turns (no image) in one batched prefill: per prompt the first-token scores
        (``scores(logits)``, default ``answer_scores``) and the greedy answer ``text``."""
        if not len(prompts):
            return []
        return self._decode(self.encode_text(prompts), self._answer_length(max_new_tokens), scores=scores)

    # ----- internals

    def _answer_length(self, max_new_tokens: int | None) -> int:
        return self.max_new_tokens if max_new_tokens is None else int(max_new_tokens)

    def _multi_batch(self, images, prompts_per_image) -> "_MultiBatch | None":
        if len(images) != len(prompts_per_image):
            raise FocusError(f"{len(images)} images but {len(prompts_per_image)} prompt lists")
        with_prompts = [i for i, prompts in enumerate(prompts_per_image) if prompts]
        if not with_prompts:
            return None
        slots = [slot for slot, i in enumerate(with_prompts) for _ in prompts_per_image[i]]
        prompts = [p for i in with_prompts for p in prompts_per_image[i]]
        chosen = images.take(with_prompts) if isinstance(images, ImageBatch) else [images[i] for i in with_prompts]
        image_batch, rows = self.encode_shared(chosen, slots, prompts)
        features = _one_row_per_image(self._tower(image_batch), len(with_prompts))
        return _MultiBatch(rows, slots, image_batch, features, len(with_prompts),
                           [len(prompts) for prompts in prompts_per_image])

    def _prefix_plan(self, batch: "_MultiBatch", max_new_tokens: int):
        if not self.share_prefix:
            return None
        meta = {k: v for k, v in batch.image_batch.items()
                if torch.is_tensor(v) and not k.startswith("pixel_values") and k not in _TEXT_KEYS
                and v.shape[0] == batch.n_images}
        type_key = next((k for k in ("token_type_ids", "mm_token_type_ids") if k in batch.rows), "")
        return plan_shared_prefix(self.model, batch.rows, batch.slots, meta,
                                  getattr(self.processor, "image_token_id", None), type_key, self._pad_id,
                                  max_new_tokens)

    def encode_shared(self, images: Sequence | ImageBatch, slots: Sequence[int], prompts: Sequence[str]):
        """(image tensors, row inputs) for rows (images[slot], prompt), each image processed once.

        The processor's image half runs on the distinct images only (or ran in a loader worker); every row's
        text is expanded with the processor's own replacement string for its image (same token count, same
        placeholder tokens) and tokenised. The row inputs carry no pixels: the rows take their image features
        from the vision tower's output.
        """
        batch = self.place_images(self.process_images(images))
        layout = self._row_layout()
        if layout is None or any(r is None for r in batch.replacements):
            # This processor cannot hand out its replacement strings: process each row's image again.
            return batch.tensors, self.encode([batch.images[s] for s in slots], prompts, with_pixels=False)
        texts, _ = self.processor.get_text_with_replacements([self.chat_text(p) for p in prompts],
                                                             [batch.replacements[s] for s in slots])
        text = self.tokenizer(texts, padding=True, return_tensors="pt", add_special_tokens=False,
                              return_token_type_ids=False)
        rows: dict[str, Any] = {"input_ids": text["input_ids"], "attention_mask": text["attention_mask"]}
        self._check_visual_tokens(rows)
        if layout:
            rows[layout] = torch.tensor(self.processor.create_mm_token_type_ids(text["input_ids"].tolist()))
        index = torch.tensor(list(slots))
        for key, value in batch.tensors.items():
            # per-image metadata (Qwen's image_grid_thw, LLaVA-NeXT's image_sizes) follows its rows
            if key in rows or key.startswith("pixel_values"):
                continue
            if value.shape[0] == len(batch):
                rows[key] = value.index_select(0, index.to(value.device))
        return batch.tensors, self._place(rows)

    def _row_layout(self) -> str | None:
        """Which token-type key this processor emits ("" for none), learnt once from a real processor call and
        checked against ``create_mm_token_type_ids``; None when the shared path cannot reproduce it."""
        if not hasattr(self, "_layout"):
            from PIL import Image

            probe = self.processor(images=[[Image.new("RGB", (64, 48))]], text=[self.chat_text("?")],
                                   return_tensors="pt", add_special_tokens=False)
            keys = [k for k in ("token_type_ids", "mm_token_type_ids") if k in probe]
            self._layout = ""
            if keys:
                rebuilt = torch.tensor(self.processor.create_mm_token_type_ids(probe["input_ids"].tolist()))
                self._layout = keys[0] if torch.equal(rebuilt, probe[keys[0]].long()) else None
        return self._layout

    def _tower(self, image_batch: dict[str, Any]):
        import inspect

        # Janus keeps get_image_features on its multimodal core only
        features = getattr(self.model, "get_image_features", None) or self.model.model.get_image_features
        accepted = inspect.signature(features).parameters
        args = {k: v for k, v in image_batch.items() if k in accepted}
        with torch.inference_mode():
            return features(**args, return_dict=True)

    @torch.inference_mode()
    def _decode(self, inputs: dict[str, Any], max_new_tokens: int, encoder_outputs=None,
                scores=None) -> list[dict[str, Any]]:
        from transformers import GenerationConfig

        kwargs = dict(inputs)
        if encoder_outputs is not None:
            kwargs["mm_encoder_outputs"] = {"image": encoder_outputs}
        config = GenerationConfig(max_new_tokens=max(1, int(max_new_tokens)), do_sample=False, num_beams=1,
                                  pad_token_id=self._pad_id,
                                  eos_token_id=self.model.generation_config.eos_token_id,
                                  output_logits=True, return_dict_in_generate=True)
        out = self.model.generate(**kwargs, generation_config=config)
        rows = (scores or self.answer_scores)(out.logits[0])
        new_tokens = out.sequences[:, inputs["input_ids"].shape[1]:]
        texts = self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        for row, text in zip(rows, texts):
            row["text"] = text
        return rows


@dataclass
class _MultiBatch:
    """Rows of several prompts per image: row inputs without pixels, each row's image slot, the distinct
    images' processor outputs and their vision-tower output."""

    rows: dict[str, Any]
    slots: list[int]
    image_batch: dict[str, Any]
    features: Any
    n_images: int
    shape: list[int]


def _select_images(features, index: Sequence[int]):
    """The per-image parts of a vision-tower output, one entry per row (an image may serve several rows)."""
    fields = {}
    for name in _IMAGE_FEATURE_FIELDS:
        value = getattr(features, name, None)
        if value is None:
            continue
        if name == "deepstack_features":
            fields[name] = [_take(layer, index) for layer in value]
        else:
            fields[name] = _take(value, index)
    return type(features)(**fields)


def _one_row_per_image(features, n_images: int):
    """The vision-tower output, checked to hold one feature row per image: the rows are shared out by image."""
    pooled = getattr(features, "pooler_output", None)
    if torch.is_tensor(pooled) and pooled.shape[0] != n_images:
        raise FocusError(f"the vision tower gave {pooled.shape[0]} feature rows for {n_images} images (images split "
                         f"into tiles); scoring needs one per image: have the processor keep each image whole "
                         f"(InternVL: --model-args processor.crop_to_patches=false)")
    return features


def _take(value, index: Sequence[int]):
    if torch.is_tensor(value):
        return value.index_select(0, torch.tensor(index, device=value.device))
    return tuple(value[i] for i in index)


def _unflatten(rows: list, shape: list[int]) -> list[list]:
    out, start = [], 0
    for n in shape:
        out.append(rows[start:start + n])
        start += n
    return out


def _pad_token_id(tokenizer, model) -> int:
    for candidate in (tokenizer.pad_token_id, model.generation_config.pad_token_id, tokenizer.eos_token_id):
        if isinstance(candidate, int):
            return candidate
    raise FocusError("the tokenizer has neither a pad token nor an end-of-sequence token to pad batches with")


# ----- loading from a preset


def choose_attention(preference: str | Sequence[str] | None, device: torch.device) -> str:
    """The first usable attention implementation from a preset's ordered preference (``sdpa`` always works)."""
    options = [preference] if isinstance(preference, str) else list(preference or ["sdpa"])
    for option in options:
        if option == "flash_attention_2":
            if device.type == "cuda" and importlib.util.find_spec("flash_attn") is not None:
                return option
            continue
        if option in {"sdpa", "eager"}:
            return option
        raise FocusError(f"unknown attention implementation {option!r} (use flash_attention_2, sdpa or eager)")
    return "sdpa"


MLLM_SETTINGS = frozenset({"attn_implementation", "processor", "max_visual_tokens", "share_prefix",
                           "allowed_missing_keys", "batch_size", "max_new_tokens", "large_model", "finetune",
                           "vision_pooling", "conversion"})
FINETUNE_SETTINGS = frozenset({"per_device_batch_size", "gradient_accumulation_steps", "target_modules",
                               "modules_to_save"})


def check_converted(preset) -> None:
    """A preset whose ``settings.conversion`` gives the steps that turn its published checkpoint into a
    transformers-format folder loads only from such a folder (``--model-args source=DIR``); from its published
    source it stops with those steps."""
    steps = (preset.settings or {}).get("conversion")
    if steps is None:
        return
    if not isinstance(steps, str) or not steps.strip():
        raise FocusError(f"preset {preset.name!r} ({preset.path}): settings.conversion must be the conversion steps")
    if not Path(str(preset.source or "")).expanduser().is_dir():
        raise FocusError(f"model {preset.name!r}: {preset.source}"
                         f"{'@' + preset.revision if preset.revision else ''} is published in a format that "
                         f"transformers does not load; convert it, then pass --model-args source=DIR. "
                         f"{' '.join(steps.split())}")


class HFMLLMAdapter(PresetAdapter, MLLMScorer):
    """A preset's multimodal LLM loaded with ``AutoModelForImageTextToText`` and ``AutoProcessor``.

    ``adapter_dir`` loads a peft LoRA adapter on top of the base model; any failure is a FocusError.
    ``max_new_tokens`` (preset setting, default 5) is the length of the greedy answers. It provides
    ``mllm_interface.MLLMAdapter`` and, in-process, ``ServedMLLM``, ``WorkerImages`` and ``VisionFeatures``.
    """

    families = ("mllm",)
    settings_keys = MLLM_SETTINGS

    @classmethod
    def validate(cls, preset) -> None:
        from focus_eval.adapters.mllm_vision import check_pooling

        super().validate(preset)
        settings = preset.settings or {}
        max_new_tokens_of(preset)
        check_pooling(preset)
        batch = settings.get("batch_size")
        for value in (batch.values() if isinstance(batch, dict) else [] if batch is None else [batch]):
            positive_int(preset, "batch_size", value)
        unknown = sorted(set(settings.get("finetune") or {}) - FINETUNE_SETTINGS)
        if unknown:
            raise FocusError(f"preset {preset.name!r} ({preset.path}): unknown settings.finetune keys "
                             f"{', '.join(unknown)}; valid: {', '.join(sorted(FINETUNE_SETTINGS))}")

    def __init__(self, preset, device: str = "cpu", adapter_dir: str | Path | None = None,
                 trust_remote_code: bool = False):
        PresetAdapter.__init__(self, preset, trust_remote_code)
        self.name = preset.name
        settings = self.settings
        device = torch.device(device)
        # float32 on CPU: bf16 matrix products are slow there and tests compare numbers at 1e-4
        dtype = getattr(torch, preset.dtype) if device.type == "cuda" else torch.float32
        attention = choose_attention(settings.get("attn_implementation"), device)
        check_converted(preset)
        source, revision = checkpoints.resolve_source(preset)
        processor, model = self._load(source, revision, dtype, attention, device)
        self.adapter_id: str | None = None
        self.adapter_path: str | None = None
        if adapter_dir is not None:
            model, self.adapter_id, self.adapter_path = load_lora(model, adapter_dir, source)
        model.to(device)
        MLLMScorer.__init__(self, model, processor, device=device, dtype=dtype,
                            max_visual_tokens=settings.get("max_visual_tokens"),
                            share_prefix=bool(settings.get("share_prefix", True)))
        self.batch_size_hint = settings.get("batch_size")
        self.max_new_tokens = max_new_tokens_of(preset)
        self.info = {
            "source": source, "revision": revision, "dtype": str(dtype).replace("torch.", ""),
            "attn_implementation": attention, "device": str(device), "adapter": self.adapter_id,
            "adapter_path": self.adapter_path, "image_processor": type(processor.image_processor).__name__,
            "image_size": _json_size(getattr(processor.image_processor, "size", None)),
            "answer_tokens": {k: dict(v) for k, v in self.answer_variants.items()},
            "max_new_tokens": self.max_new_tokens,
        }

    def image_encoder(self):
        """This model's vision tower as an image encoder for the embedding path (``ve_probe``), built once."""
        if getattr(self, "_image_encoder", None) is None:
            from focus_eval.adapters.mllm_vision import MLLMVisionEncoder

            self._image_encoder = MLLMVisionEncoder(self, self.preset)
        return self._image_encoder

    def _load(self, source: str, revision: str | None, dtype, attention: str, device: torch.device):
        """(processor, model) from ``source``, weights checked strictly against the preset's allow-list."""
        from transformers import AutoModelForImageTextToText, AutoProcessor
        from transformers.utils import logging as hf_logging

        preset, remote = self.preset, self.trust_remote_code
        # On a GPU the weights load straight onto it (a 27B model never passes through host memory as a whole).
        placement = {"device_map": {"": str(device)}} if device.type == "cuda" else {}
        bars_were_on = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()
        try:
            processor = AutoProcessor.from_pretrained(source, revision=revision, trust_remote_code=remote,
                                                      **dict(self.settings.get("processor") or {}))
            model, info = AutoModelForImageTextToText.from_pretrained(
                source, revision=revision, dtype=dtype, attn_implementation=attention, trust_remote_code=remote,
                output_loading_info=True, **placement)
        except (OSError, ValueError, KeyError) as exc:
            if not Path(source).is_dir() and offline():  # the hub's text says it "couldn't connect"
                raise FocusError(f"model {preset.name!r}: {offline_missing(source)}") from None
            hint = "" if Path(source).is_dir() else " " + advice(source, bool(preset.gated))
            raise FocusError(f"model {preset.name!r}: cannot load {source}"
                             f"{'@' + revision if revision else ''}: {exc}.{hint}") from exc
        finally:
            if bars_were_on:
                hf_logging.enable_progress_bar()
        # The preset's allow-list holds regular expressions and covers every kind of deviation.
        allowed = list(self.settings.get("allowed_missing_keys") or [])
        checkpoints.check_hf_loading(info, allowed, allowed, f"model {preset.name!r} from {source}",
                                     allow_mismatched=allowed, regex=True)
        return processor, model


def positive_int(preset, key: str, value: Any) -> int:
    """``value`` as a whole number of at least 1 (``--model-args`` may give it as text), else a FocusError."""
    text = value.strip() if isinstance(value, str) else None
    if isinstance(value, bool) or not (isinstance(value, int) or (text and text.isdigit())) or int(value) < 1:
        raise FocusError(f"preset {preset.name!r}: settings.{key} must be a whole number of at least 1, "
                         f"got {value!r}")
    return int(value)


def max_new_tokens_of(preset) -> int:
    """The greedy answer length: ``settings.max_new_tokens`` (``--model-args max_new_tokens=N``), default 5."""
    return positive_int(preset, "max_new_tokens", (preset.settings or {}).get("max_new_tokens",
                                                                              DEFAULT_MAX_NEW_TOKENS))


def _json_size(size) -> Any:
    if size is None:
        return None
    if hasattr(size, "items"):
        return {k: v for k, v in dict(size).items() if v is not None}
    return {k: v for k, v in vars(size).items() if v is not None} if hasattr(size, "__dict__") else str(size)
