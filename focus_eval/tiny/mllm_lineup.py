"""Tiny untrained models of the image-text classes behind FunBench's MLLM line-up (LLaVA-1.5, Qwen2-VL,
Qwen2.5-VL, InternVL, Janus), built offline in seconds the way ``focus_eval.tiny.mllm`` builds the others.

Every builder is one call to :func:`_build` with the class's own configuration, processor and chat template: the
text model and tokenizer settings, the answer-word checks, the weight spread and the saving are shared.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from focus_eval.tiny import TinyBuilder
from focus_eval.tiny.mllm import _QWEN_SPECIAL, QWEN3_VL_TEMPLATE, SEED, _save, train_tokenizer

# Bump when anything below changes what gets written, so stale cached copies are rebuilt.
BUILD_VERSION = 1

# The language model every tiny model shares: two layers, 64 wide, grouped-query attention.
TEXT = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
            max_position_embeddings=2048)
# Qwen's multimodal rotary sections (temporal, height, width) over a 32-wide head: 16 frequencies.
QWEN_ROPE = {"rope_type": "default", "rope_theta": 1_000_000.0, "mrope_section": [6, 5, 5]}

# LLaVA-1.5's Vicuna turn format: "USER: <image>\n{question} ASSISTANT:".
LLAVA15_TEMPLATE = (
    "{{ bos_token }}"
    "{%- for message in messages -%}"
    "{{ message['role'].upper() + ': ' }}"
    "{%- if message['content'] is string -%}{{ message['content'] }}"
    "{%- else -%}"
    "{%- for item in message['content'] -%}{%- if item['type'] == 'image' -%}{{ '<image>\n' }}{%- endif -%}"
    "{%- endfor -%}"
    "{%- for item in message['content'] -%}{%- if item['type'] == 'text' -%}{{ item['text'] }}{%- endif -%}"
    "{%- endfor -%}"
    "{%- endif -%}{{ ' ' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ 'ASSISTANT:' }}{%- endif -%}"
)
# InternVL 2.5 speaks the same ChatML turns as Qwen; its image stands as one context token the processor expands.
INTERNVL_TEMPLATE = QWEN3_VL_TEMPLATE.replace("<|vision_start|><|image_pad|><|vision_end|>", "<IMG_CONTEXT>\n")
# Janus-Pro's DeepSeek turns: "<|User|>: <image_placeholder>\n{question}\n\n<|Assistant|>:".
JANUS_TEMPLATE = (
    "{{ bos_token }}"
    "{%- for message in messages -%}"
    "{{ '<|' + message['role'].capitalize() + '|>: ' }}"
    "{%- if message['content'] is string -%}{{ message['content'] }}"
    "{%- else -%}{%- for item in message['content'] -%}"
    "{%- if item['type'] == 'image' -%}{{ '<image_placeholder>\n' }}"
    "{%- elif item['type'] == 'text' -%}{{ item['text'] }}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{{ '\n\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|Assistant|>:' }}{%- endif -%}"
)
_VICUNA_SPECIAL = ["<s>", "</s>", "<unk>", "<pad>", "<image>"]
_INTERNVL_SPECIAL = [*_QWEN_SPECIAL, "<img>", "</img>", "<IMG_CONTEXT>"]
_JANUS_SPECIAL = ["<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<pad>", "<image_placeholder>", "<begin_of_image>",
                  "<end_of_image>"]


def _build(folder: Path, model_class: str, config: Callable[[Any, dict], Any], processor: Callable[[Any], Any],
           special: list[str], roles: dict[str, str], named: dict[str, str], eos: list[str]) -> None:
    """Train the tokenizer, build ``config(ids, text)`` (``ids``: token name -> id, ``text``: the shared
    language-model settings wired to the tokenizer), wrap the tokenizer in ``processor(tokenizer)`` and save
    the randomly initialised ``model_class`` beside it with a generation configuration."""
    import transformers

    tokenizer = train_tokenizer(special, named=named or None, **roles)
    ids = tokenizer.convert_tokens_to_ids
    pad = ids(roles["pad_token"])
    bos = ids(roles["bos_token"]) if "bos_token" in roles else None
    text = dict(TEXT, vocab_size=len(tokenizer), pad_token_id=pad, bos_token_id=bos,
                eos_token_id=[ids(t) for t in eos])
    model = getattr(transformers, model_class)(config(ids, text))
    _save(folder, model, processor(tokenizer), transformers.GenerationConfig(
        bos_token_id=bos, pad_token_id=pad, eos_token_id=[ids(t) for t in eos]))


def _build_llava(folder: Path) -> None:
    from transformers import CLIPImageProcessor, LlavaConfig, LlavaProcessor

    tile, patch = 32, 8

    def config(ids, text):
        return LlavaConfig(
            text_config=dict(text, model_type="llama"),
            vision_config=dict(model_type="clip_vision_model", hidden_size=32, intermediate_size=64,
                               num_hidden_layers=2, num_attention_heads=2, image_size=tile, patch_size=patch,
                               projection_dim=32),
            image_token_index=ids("<image>"), vision_feature_layer=-2, vision_feature_select_strategy="default")

    def processor(tokenizer):
        # LLaVA-1.5 resizes the shorter side and centre-crops a square tile (CLIP preprocessing).
        image_processor = CLIPImageProcessor(size={"shortest_edge": tile}, crop_size={"height": tile, "width": tile})
        return LlavaProcessor(image_processor=image_processor, tokenizer=tokenizer, patch_size=patch,
                              vision_feature_select_strategy="default", num_additional_image_tokens=1,
                              chat_template=LLAVA15_TEMPLATE)

    _build(folder, "LlavaForConditionalGeneration", config, processor, _VICUNA_SPECIAL,
           dict(bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>"),
           {"image_token": "<image>"}, ["</s>"])


def _qwen_builder(prefix: str) -> Callable[[Path], None]:
    """Qwen2-VL (``"Qwen2VL"``) or Qwen2.5-VL (``"Qwen2_5_VL"``), named by the prefix of their transformers
    classes: 8-px patches merged 2 x 2, at most 16 visual tokens."""
    patch, merge = 8, 2
    # Qwen2.5-VL's tower adds window attention (one full-attention block here) and a SwiGLU MLP.
    vision = (dict(depth=2, embed_dim=32, hidden_size=64, mlp_ratio=2, num_heads=2) if prefix == "Qwen2VL" else
              dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64, window_size=32,
                   fullatt_block_indexes=[1]))

    def config(ids, text):
        import transformers

        return getattr(transformers, f"{prefix}Config")(
            text_config=dict(text, rope_parameters=QWEN_ROPE),
            vision_config=dict(vision, patch_size=patch, spatial_merge_size=merge, temporal_patch_size=2),
            image_token_id=ids("<|image_pad|>"), video_token_id=ids("<|video_pad|>"),
            vision_start_token_id=ids("<|vision_start|>"), vision_end_token_id=ids("<|vision_end|>"))

    def processor(tokenizer):
        import transformers
        from transformers import Qwen2VLImageProcessor, Qwen2VLVideoProcessor

        budget = {"shortest_edge": 16 * 16 * 4, "longest_edge": 64 * 64}
        kwargs = dict(size=budget, patch_size=patch, merge_size=merge, temporal_patch_size=2)
        processor_class = getattr(transformers, f"{prefix}Processor")
        return processor_class(image_processor=Qwen2VLImageProcessor(**kwargs, image_mean=[0.5] * 3,
                                                                     image_std=[0.5] * 3),
                               video_processor=Qwen2VLVideoProcessor(**kwargs), tokenizer=tokenizer,
                               chat_template=QWEN3_VL_TEMPLATE)

    def build(folder: Path) -> None:
        _build(folder, f"{prefix}ForConditionalGeneration", config, processor,
               _QWEN_SPECIAL, dict(pad_token="<|endoftext|>", eos_token="<|im_end|>"),
               {"image_token": "<|image_pad|>", "video_token": "<|video_pad|>",
                "vision_start_token": "<|vision_start|>", "vision_end_token": "<|vision_end|>"},
               ["<|im_end|>", "<|endoftext|>"])

    return build


def _build_internvl(folder: Path) -> None:
    from transformers import GotOcr2ImageProcessor, InternVLConfig, InternVLProcessor, InternVLVideoProcessor

    size, patch = 32, 8
    # a 4 x 4 patch grid, pixel-shuffled by InternVL's 0.5 downsample ratio: 4 tokens per image
    tokens = (size // patch) ** 2 // 4

    def config(ids, text):
        return InternVLConfig(
            text_config=dict(text, model_type="qwen2", rope_parameters={"rope_type": "default", "rope_theta": 1e6}),
            vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                               image_size=[size, size], patch_size=[patch, patch]),
            image_token_id=ids("<IMG_CONTEXT>"), image_seq_length=tokens, downsample_ratio=0.5)

    def processor(tokenizer):
        # one square tile per image: InternVL's dynamic tiling is switched off (crop_to_patches) for the tiny model
        image_processor = GotOcr2ImageProcessor(size={"height": size, "width": size}, crop_to_patches=False,
                                                image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225])
        return InternVLProcessor(image_processor=image_processor, tokenizer=tokenizer, image_seq_length=tokens,
                                 video_processor=InternVLVideoProcessor(), chat_template=INTERNVL_TEMPLATE)

    _build(folder, "InternVLForConditionalGeneration", config, processor, _INTERNVL_SPECIAL,
           dict(pad_token="<|endoftext|>", eos_token="<|im_end|>"),
           {"start_image_token": "<img>", "end_image_token": "</img>", "context_image_token": "<IMG_CONTEXT>",
            "video_token": "<|video_pad|>"}, ["<|im_end|>", "<|endoftext|>"])


def _build_janus(folder: Path) -> None:
    from transformers import JanusConfig, JanusImageProcessor, JanusProcessor

    size, patch = 32, 8
    tokens = (size // patch) ** 2

    def config(ids, text):
        # The VQ image generator is part of the class; it is kept as small as it can be and never runs here.
        vq = dict(embed_dim=8, num_embeddings=32, latent_channels=8, base_channels=32, channel_multiplier=[1, 1],
                  num_res_blocks=1, num_patches=2, projection_dim=64, image_token_embed_dim=64, num_hidden_layers=1)
        return JanusConfig(text_config=dict(text, model_type="llama"),
                           vision_config=dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                              image_size=size, patch_size=patch, projection_dim=64, mlp_ratio=2.0,
                                              num_image_tokens=tokens),
                           vq_config=vq, image_token_id=ids("<image_placeholder>"))

    def processor(tokenizer):
        image_processor = JanusImageProcessor(size={"height": size, "width": size}, min_size=patch,
                                              image_mean=[0.5] * 3, image_std=[0.5] * 3)
        return JanusProcessor(image_processor=image_processor, tokenizer=tokenizer, num_image_tokens=tokens,
                              chat_template=JANUS_TEMPLATE)

    _build(folder, "JanusForConditionalGeneration", config, processor, _JANUS_SPECIAL,
           dict(bos_token="<｜begin▁of▁sentence｜>", eos_token="<｜end▁of▁sentence｜>", pad_token="<pad>"),
           {"image_token": "<image_placeholder>", "boi_token": "<begin_of_image>", "eoi_token": "<end_of_image>"},
           ["<｜end▁of▁sentence｜>"])


def _builder(build) -> TinyBuilder:
    return TinyBuilder(build, seed=SEED, version=BUILD_VERSION, family="mllm", version_key="build_version")


TINY_LLAVA = _builder(_build_llava)
TINY_QWEN2_VL = _builder(_qwen_builder("Qwen2VL"))
TINY_QWEN2_5_VL = _builder(_qwen_builder("Qwen2_5_VL"))
TINY_INTERNVL = _builder(_build_internvl)
TINY_JANUS = _builder(_build_janus)
