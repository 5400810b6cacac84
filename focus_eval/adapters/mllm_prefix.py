"""Shared-prefix prefill: several prompts on one image pay for the image's part of the sequence once.

With the image before the prompt text in the user turn, every row of one image starts with the same tokens
(chat header, image tokens). Those prefixes run once per image and fill a key/value cache; the cache is copied
to each of the image's rows, and only the remaining tokens (the prompt and the generation header) run per row.
Rows are laid out as [prefix padding | prefix | suffix padding | suffix]: the attention mask hides both
paddings and every row keeps the position ids it would have in a plain left-padded batch, so the numbers match
the plain path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch


@dataclass
class SharedPrefix:
    """Inputs for one shared-prefix pass: a prefix batch (one row per image) and a suffix batch (one per row)."""

    prefix_inputs: dict[str, Any]
    suffix_ids: torch.Tensor
    total_mask: torch.Tensor  # [rows, prefix length + suffix length]
    suffix_positions: torch.Tensor
    slots: torch.Tensor  # image slot of each row
    rows_are_images: bool = False  # one prompt per image: the prefix cache rows are the rows already


def plan_shared_prefix(model, rows: dict[str, Any], slots: Sequence[int], image_meta: dict[str, Any],
                       image_token_id: int | None, type_key: str, pad_id: int,
                       max_new_tokens: int) -> SharedPrefix | None:
    """Split left-padded ``rows`` into per-image prefixes and per-row suffixes; None when the split would not
    give the plain numbers (an image token after the shared part, or a sliding attention window shorter than
    the padded sequence, where the extra padding would push real tokens out of the window)."""
    device = rows["input_ids"].device
    # Planning is bookkeeping on a few hundred token ids: do it on the host, without a device sync per row.
    ids, mask = rows["input_ids"].cpu(), rows["attention_mask"].cpu()
    type_ids = rows[type_key].cpu() if type_key else None
    lengths = mask.sum(dim=1).tolist()
    width = ids.shape[1]
    real = [ids[r, width - n:] for r, n in enumerate(lengths)]
    n_images = max(slots) + 1
    shared = []
    for slot in range(n_images):
        members = [r for r, s in enumerate(slots) if s == slot]
        common = _common_prefix([real[r] for r in members])
        # every row keeps at least one token of its own: the last position's logits come from the suffix pass
        common = min(common, min(lengths[r] for r in members) - 1)
        if image_token_id is not None:
            image_positions = (real[members[0]] == image_token_id).nonzero()
            if len(image_positions) and int(image_positions[-1]) >= common:
                return None
        if common <= 0:
            return None
        shared.append(common)
    prefix_width = max(shared)
    suffix_lengths = [lengths[r] - shared[s] for r, s in enumerate(slots)]
    suffix_width = max(suffix_lengths)
    if not _fits_window(model, prefix_width + suffix_width + max_new_tokens):
        return None

    prefix_ids = torch.full((n_images, prefix_width), pad_id, dtype=ids.dtype)
    prefix_mask = torch.zeros((n_images, prefix_width), dtype=mask.dtype)
    prefix_types = torch.zeros((n_images, prefix_width), dtype=type_ids.dtype) if type_key else None
    for slot, common in enumerate(shared):
        row = slots.index(slot)
        start = width - lengths[row]
        prefix_ids[slot, prefix_width - common:] = ids[row, start:start + common]
        prefix_mask[slot, prefix_width - common:] = 1
        if prefix_types is not None:
            prefix_types[slot, prefix_width - common:] = type_ids[row, start:start + common]
    prefix_inputs = {"input_ids": prefix_ids.to(device), "attention_mask": prefix_mask.to(device), **image_meta}
    if prefix_types is not None:
        prefix_inputs[type_key] = prefix_types.to(device)

    suffix_ids = torch.full((len(slots), suffix_width), pad_id, dtype=ids.dtype)
    suffix_mask = torch.zeros((len(slots), suffix_width), dtype=mask.dtype)
    for r, n in enumerate(suffix_lengths):
        suffix_ids[r, suffix_width - n:] = ids[r, width - n:]
        suffix_mask[r, suffix_width - n:] = 1
    index = torch.tensor(list(slots))
    total_mask = torch.cat([prefix_mask.index_select(0, index), suffix_mask], dim=1)
    # Positions of the suffix tokens as the plain left-padded batch has them: its last suffix_width columns.
    positions = model._prepare_position_ids_for_generation(rows["input_ids"], dict(rows))[..., -suffix_width:]
    return SharedPrefix(prefix_inputs, suffix_ids.to(device), total_mask.to(device), positions, index.to(device),
                        list(slots) == list(range(len(slots))))


@torch.inference_mode()
def run_shared_prefix(model, plan: SharedPrefix, image_features) -> tuple[torch.Tensor, Any]:
    """Prefill the prefixes (with the images' features), copy the cache to every row, run the suffixes.
    Returns the last position's logits (rows x vocabulary) and the rows' cache for decoding on."""
    prefix = dict(plan.prefix_inputs)
    prefix["position_ids"] = model._prepare_position_ids_for_generation(prefix["input_ids"], dict(prefix))
    out = model(**prefix, mm_encoder_outputs={"image": image_features}, use_cache=True, logits_to_keep=1)
    cache = out.cache
    if not plan.rows_are_images:
        cache.reorder_cache(plan.slots)  # one cache row per prompt
    out = model(input_ids=plan.suffix_ids, attention_mask=plan.total_mask, position_ids=plan.suffix_positions,
                cache=cache, use_cache=True, logits_to_keep=1)
    return out.logits[:, -1, :].float(), out.cache


@torch.inference_mode()
def greedy_continue(model, first_logits: torch.Tensor, cache, mask: torch.Tensor, positions: torch.Tensor,
                    max_new_tokens: int, eos_ids: set[int], pad_id: int) -> list[list[int]]:
    """Greedy decoding from a filled cache; per row the new tokens up to and including the first end token."""
    rows = first_logits.shape[0]
    tokens = [[] for _ in range(rows)]
    done = [False] * rows
    logits = first_logits
    last = positions[..., -1:]
    for step in range(max(1, int(max_new_tokens))):
        chosen = logits.argmax(dim=-1)
        for r, token in enumerate(chosen.tolist()):
            if not done[r]:
                tokens[r].append(token)
                done[r] = token in eos_ids
        if all(done) or step + 1 >= max_new_tokens:
            break
        feed = torch.tensor([pad_id if d else t for d, t in zip(done, chosen.tolist())], device=mask.device)
        mask = torch.cat([mask, torch.ones((rows, 1), dtype=mask.dtype, device=mask.device)], dim=1)
        last = last + 1
        out = model(input_ids=feed[:, None], attention_mask=mask, position_ids=last, cache=cache, use_cache=True,
                    logits_to_keep=1)
        cache = out.cache
        logits = out.logits[:, -1, :].float()
    return tokens


def _common_prefix(sequences: list[torch.Tensor]) -> int:
    shortest = min(len(s) for s in sequences)
    first = sequences[0][:shortest]
    same = torch.ones(shortest, dtype=torch.bool, device=first.device)
    for other in sequences[1:]:
        same &= other[:shortest] == first
    differs = (~same).nonzero()
    return int(differs[0]) if len(differs) else shortest


def _fits_window(model, length: int) -> bool:
    # Conservative: any model that declares a sliding window must fit the whole padded row inside it.
    window = getattr(model.config.get_text_config(), "sliding_window", None)
    return window is None or length < window
