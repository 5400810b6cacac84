"""Small untrained multimodal LLMs of the real architectures, built offline in seconds for tests and the demo.

Each tiny model is a randomly initialised instance of the real model class (Gemma 3, Qwen3-VL, LLaVA-NeXT)
with a tiny configuration, a byte-level BPE tokenizer trained on the spot, the real processor and image
processor classes, and a chat template in the real model's format. It is saved with ``save_pretrained`` so
that the adapter loads it through the same ``AutoProcessor`` / ``AutoModelForImageTextToText`` path as a hub
model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from focus_eval.errors import FocusError
from focus_eval.tiny import TinyBuilder

# Bump when anything below changes what gets written, so stale cached copies are rebuilt.
BUILD_VERSION = 3
SEED = 1234

ANSWER_WORDS = ("yes", "no", "Yes", "No", "YES", "NO")

# Text the tokenizer is trained on: answer words in the contexts the scorer encodes them in, plus task-style
# prompt words so prompts tokenise into a sensible number of pieces.
_CORPUS = """
Based on the fundus image, does this eye show diabetic retinopathy?
Respond with **yes** if any level of diabetic retinopathy is present, or **no** otherwise.
Respond only with "yes" or "no" (without additional commentary).
Based on the fundus image, does this eye show referable diabetic retinopathy?
Respond with **yes** if the image should be referred for diabetic retinopathy evaluation or treatment.
Based on the fundus image, does this eye show glaucoma or glaucomatous optic disc changes?
Respond with **yes** if glaucoma or suspicious glaucomatous changes are present, or **no** otherwise.
The retina, the optic disc, the cup, the macula and the vessels look normal. I think the answer is no.
Yes. No. yes. no. Yes, no, yes, no. The answer: Yes. The answer: No. user model assistant system
"""

# Special tokens of each family, in the real models' spelling.
_GEMMA_SPECIAL = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>",
                  "<end_of_image>", "<image_soft_token>"]
_QWEN_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                 "<|image_pad|>", "<|video_pad|>"]
_LLAMA_SPECIAL = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                  "<|eot_id|>", "<image>", "<|finetune_right_pad_id|>"]

# Chat templates written in each real model's turn format: a user turn of [image, text], then the model's turn.
GEMMA3_TEMPLATE = (
    "{{ bos_token }}"
    "{%- for message in messages -%}"
    "{%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}"
    "{{ '<start_of_turn>' + role + '\n' }}"
    "{%- if message['content'] is string -%}{{ message['content'] | trim }}"
    "{%- else -%}{%- for item in message['content'] -%}"
    "{%- if item['type'] == 'image' -%}{{ '<start_of_image>' }}"
    "{%- elif item['type'] == 'text' -%}{{ item['text'] | trim }}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{{ '<end_of_turn>\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}{%- endif -%}"
)
QWEN3_VL_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{ '<|im_start|>' + message['role'] + '\n' }}"
    "{%- if message['content'] is string -%}{{ message['content'] }}"
    "{%- else -%}{%- for item in message['content'] -%}"
    "{%- if item['type'] == 'image' -%}{{ '<|vision_start|><|image_pad|><|vision_end|>' }}"
    "{%- elif item['type'] == 'text' -%}{{ item['text'] }}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{{ '<|im_end|>\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\n' }}{%- endif -%}"
)
LLAVA_NEXT_LLAMA3_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if loop.index0 == 0 -%}{{ bos_token }}{%- endif -%}"
    "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' }}"
    "{%- if message['content'] is string -%}{{ message['content'] + '<|eot_id|>' }}"
    "{%- else -%}"
    "{%- for item in message['content'] -%}{%- if item['type'] == 'image' -%}{{ '<image>\n' }}{%- endif -%}"
    "{%- endfor -%}"
    "{%- for item in message['content'] -%}{%- if item['type'] == 'text' -%}{{ item['text'] }}{%- endif -%}"
    "{%- endfor -%}{{ '<|eot_id|>' }}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{%- endif -%}"
)


def train_tokenizer(special_tokens: list[str], vocab_size: int = 480, named: dict[str, str] | None = None,
                    **roles: str):
    """A byte-level BPE tokenizer trained on a small corpus; answer words end up as single tokens.

    ``roles`` maps bos_token/eos_token/pad_token/unk_token to special tokens; ``named`` sets model-specific
    named tokens (``image_token``, ``boi_token``, ...) that the real processors read from the tokenizer.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(special_tokens),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    # Repeating the answer words, with and without a leading space, guarantees merges for all of them.
    answers = " ".join(f"{w} {w}. {w}," for w in ANSWER_WORDS)
    tokenizer.train_from_iterator([_CORPUS] * 4 + [answers] * 40 + [w for w in ANSWER_WORDS] * 40,
                                  trainer=trainer)
    # A dict of named tokens gives the tokenizer attributes such as ``image_token`` (read by the processors);
    # every special token is already unsplittable, having been registered with the trainer.
    extra = dict(named) if named else [t for t in special_tokens if t not in roles.values()]
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, clean_up_tokenization_spaces=False, **roles,
                                   extra_special_tokens=extra)


def _check_answer_tokens(tokenizer, name: str) -> None:
    for word in ("yes", "no", "Yes", "No", " yes", " no", " Yes", " No"):
        ids = tokenizer.encode(word, add_special_tokens=False)
        if len(ids) != 1:
            raise FocusError(f"tiny model {name!r}: {word!r} is not a single token ({ids}); rebuild the tokenizer")


def gemma3_tokenizer():
    """A small tokenizer with Gemma 3's special tokens (turn markers, image markers, soft image token)."""
    return train_tokenizer(_GEMMA_SPECIAL, pad_token="<pad>", eos_token="<eos>", bos_token="<bos>",
                           unk_token="<unk>",
                           named={"image_token": "<image_soft_token>", "boi_token": "<start_of_image>",
                                  "eoi_token": "<end_of_image>"})


def gemma3_special_ids(tokenizer) -> dict[str, Any]:
    """The token ids a Gemma 3 configuration must agree on with ``tokenizer``."""
    ids = tokenizer.convert_tokens_to_ids
    return {"pad": ids("<pad>"), "bos": ids("<bos>"), "eos": [ids("<eos>"), ids("<end_of_turn>")],
            "boi": ids("<start_of_image>"), "eoi": ids("<end_of_image>"), "image": ids("<image_soft_token>")}


def gemma3_processor(tokenizer, image_size: int, tokens_per_image: int):
    """The real Gemma 3 processor (squash to ``image_size``, mean = std = 0.5) around ``tokenizer``."""
    from transformers import Gemma3ImageProcessor, Gemma3Processor

    image_processor = Gemma3ImageProcessor(size={"height": image_size, "width": image_size},
                                           image_mean=[0.5] * 3, image_std=[0.5] * 3)
    return Gemma3Processor(image_processor=image_processor, tokenizer=tokenizer, chat_template=GEMMA3_TEMPLATE,
                           image_seq_length=tokens_per_image)


def gemma3_config(text: dict[str, Any], vision: dict[str, Any], tokens_per_image: int, special: dict[str, Any]):
    """A Gemma 3 configuration from text and SigLIP vision settings, wired to a tokenizer's special ids."""
    from transformers import Gemma3Config

    text = dict(text, pad_token_id=special["pad"], eos_token_id=special["eos"], bos_token_id=special["bos"])
    return Gemma3Config(text_config=text, vision_config=dict(vision, model_type="siglip_vision_model"),
                        mm_tokens_per_image=tokens_per_image, boi_token_index=special["boi"],
                        eoi_token_index=special["eoi"], image_token_index=special["image"])


def _build_gemma3(folder: Path) -> None:
    from transformers import Gemma3ForConditionalGeneration, GenerationConfig

    tokenizer = gemma3_tokenizer()
    special = gemma3_special_ids(tokenizer)
    tokens_per_image = 16
    config = gemma3_config(
        text=dict(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=2, num_key_value_heads=1, head_dim=32, query_pre_attn_scalar=32,
                  sliding_window=128, layer_types=["sliding_attention", "full_attention"],
                  max_position_embeddings=2048),
        vision=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                    image_size=64, patch_size=8),
        tokens_per_image=tokens_per_image, special=special)
    processor = gemma3_processor(tokenizer, image_size=64, tokens_per_image=tokens_per_image)
    model = Gemma3ForConditionalGeneration(config)
    _save(folder, model, processor, GenerationConfig(bos_token_id=special["bos"], pad_token_id=special["pad"],
                                                     eos_token_id=special["eos"]))


def _build_qwen3_vl(folder: Path) -> None:
    from transformers import (GenerationConfig, Qwen2VLImageProcessor, Qwen3VLConfig,
                              Qwen3VLForConditionalGeneration, Qwen3VLProcessor, Qwen3VLVideoProcessor)

    tokenizer = train_tokenizer(_QWEN_SPECIAL, pad_token="<|endoftext|>", eos_token="<|im_end|>",
                                named={"image_token": "<|image_pad|>", "video_token": "<|video_pad|>",
                                       "vision_start_token": "<|vision_start|>",
                                       "vision_end_token": "<|vision_end|>"})
    ids = tokenizer.convert_tokens_to_ids
    patch, merge = 8, 2
    config = Qwen3VLConfig(
        text_config=dict(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=32, max_position_embeddings=2048,
                         rope_parameters={"rope_type": "default", "rope_theta": 5_000_000.0,
                                          "mrope_section": [6, 5, 5], "mrope_interleaved": True},
                         pad_token_id=ids("<|endoftext|>")),
        vision_config=dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, patch_size=patch,
                           spatial_merge_size=merge, temporal_patch_size=2, out_hidden_size=64,
                           num_position_embeddings=64, deepstack_visual_indexes=[0]),
        image_token_id=ids("<|image_pad|>"), video_token_id=ids("<|video_pad|>"),
        vision_start_token_id=ids("<|vision_start|>"), vision_end_token_id=ids("<|vision_end|>"),
    )
    # The pixel budget keeps visual tokens bounded (at most 4096 px = 16 merged tokens per image).
    budget = {"shortest_edge": 16 * 16 * 4, "longest_edge": 64 * 64}
    image_processor = Qwen2VLImageProcessor(size=budget, patch_size=patch, merge_size=merge, temporal_patch_size=2,
                                            image_mean=[0.5] * 3, image_std=[0.5] * 3)
    video_processor = Qwen3VLVideoProcessor(size=budget, patch_size=patch, merge_size=merge, temporal_patch_size=2)
    processor = Qwen3VLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                 video_processor=video_processor, chat_template=QWEN3_VL_TEMPLATE)
    model = Qwen3VLForConditionalGeneration(config)
    _save(folder, model, processor, GenerationConfig(
        pad_token_id=ids("<|endoftext|>"), eos_token_id=[ids("<|im_end|>"), ids("<|endoftext|>")]))


def _build_llava_next(folder: Path) -> None:
    from transformers import (GenerationConfig, LlavaNextConfig, LlavaNextForConditionalGeneration,
                              LlavaNextImageProcessor, LlavaNextProcessor)

    tokenizer = train_tokenizer(_LLAMA_SPECIAL, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>",
                                pad_token="<|finetune_right_pad_id|>", named={"image_token": "<image>"})
    ids = tokenizer.convert_tokens_to_ids
    tile, patch = 32, 8
    pinpoints = [[32, 64], [64, 32], [64, 64]]
    config = LlavaNextConfig(
        text_config=dict(model_type="llama", vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128,
                         num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                         max_position_embeddings=2048, bos_token_id=ids("<|begin_of_text|>"),
                         eos_token_id=[ids("<|eot_id|>"), ids("<|end_of_text|>")],
                         pad_token_id=ids("<|finetune_right_pad_id|>")),
        vision_config=dict(model_type="clip_vision_model", hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=2, image_size=tile, patch_size=patch, projection_dim=32),
        image_grid_pinpoints=pinpoints, image_token_index=ids("<image>"), vision_feature_layer=-2,
        vision_feature_select_strategy="default",
    )
    image_processor = LlavaNextImageProcessor(size={"shortest_edge": tile}, crop_size={"height": tile, "width": tile},
                                              image_grid_pinpoints=pinpoints)
    processor = LlavaNextProcessor(image_processor=image_processor, tokenizer=tokenizer, patch_size=patch,
                                   vision_feature_select_strategy="default", num_additional_image_tokens=1,
                                   chat_template=LLAVA_NEXT_LLAMA3_TEMPLATE)
    model = LlavaNextForConditionalGeneration(config)
    _save(folder, model, processor, GenerationConfig(
        bos_token_id=ids("<|begin_of_text|>"), pad_token_id=ids("<|finetune_right_pad_id|>"),
        eos_token_id=[ids("<|eot_id|>"), ids("<|end_of_text|>")]))


def _spread_weights(model) -> None:
    """Redraw every weight matrix with std 1/sqrt(fan-in).

    The libraries' own initialisation is tuned for training from scratch: tiny logits that barely depend on the
    input, and Gemma 3's image projection starts at zero, so the image would not reach the language model at
    all. Unit-scale weights make answers depend on the image and the prompt, which the tests rely on.
    """
    import torch

    with torch.no_grad():
        for param in model.parameters():
            if param.ndim >= 2:
                param.normal_(0.0, param.shape[-1] ** -0.5)


def _save(folder: Path, model, processor, generation_config) -> None:
    _check_answer_tokens(processor.tokenizer, folder.name)
    _spread_weights(model)
    model.generation_config = generation_config
    model.save_pretrained(folder)
    processor.save_pretrained(folder)


def _builder(build) -> TinyBuilder:
    return TinyBuilder(build, seed=SEED, version=BUILD_VERSION, family="mllm", version_key="build_version")


TINY_MEDGEMMA = _builder(_build_gemma3)
TINY_QWEN_VL = _builder(_build_qwen3_vl)
TINY_LLAVA_NEXT = _builder(_build_llava_next)
