"""The image half of a multimodal LLM's processor, split from its text half so that it can run in DataLoader
workers: ``ImageProcessing`` turns one decoded image into the processor's image tensors and the placeholder
text that stands for the image in a prompt; ``collate`` joins images into an ``ImageBatch``, which is pinned,
sliced and moved to the device as one. The text half (chat template, placeholder expansion, tokenising) stays
with the scorer, which runs it per (image, prompt) row."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import torch

# Processor outputs that belong to the text, not to the image.
TEXT_KEYS = ("input_ids", "attention_mask", "token_type_ids", "mm_token_type_ids")


@dataclass
class ProcessedImage:
    """One image's processor tensors (their first dimension counts this image's rows), its placeholder text
    (None when the processor gives none), and the decoded image itself where rows must be processed whole."""

    tensors: dict[str, torch.Tensor]
    replacement: str | None
    image: Any = None


class ImageProcessing:
    """Picklable decoded image -> ``ProcessedImage``: the processor run on a chat turn holding only the image,
    floating-point tensors cast to the model's dtype (bf16 on a GPU: half the bytes to pin and copy)."""

    def __init__(self, processor, image_turn: str, dtype: torch.dtype | None, keep_images: bool = False):
        self.processor = processor
        self.image_turn = image_turn
        self.dtype = dtype
        self.keep_images = keep_images

    def __call__(self, image) -> ProcessedImage:
        # the chat template already wrote the special tokens; the processor must not add them again
        out = dict(self.processor(images=[[image]], text=[self.image_turn], return_tensors="pt",
                                  add_special_tokens=False, return_text_replacement_offsets=True))
        offsets = out.pop("text_replacement_offsets", None)
        tensors = {}
        for key, value in out.items():
            if key in TEXT_KEYS or not torch.is_tensor(value):
                continue
            tensors[key] = value.to(self.dtype) if self.dtype is not None and value.is_floating_point() else value
        replacement = offsets[0][0]["replacement"] if offsets and offsets[0] else None
        keep = self.keep_images or replacement is None
        return ProcessedImage(tensors, replacement, image if keep else None)


@dataclass
class ImageBatch:
    """Processor tensors of several images, joined along the first dimension; ``bounds[key][i]`` is image
    i's (start, stop) there (one row per image for most tensors, one per patch for Qwen's pixels)."""

    tensors: dict[str, torch.Tensor]
    bounds: dict[str, list[tuple[int, int]]]
    replacements: list[str | None]
    images: list | None = None
    _pinned: bool = field(default=False, repr=False)

    def __len__(self) -> int:
        return len(self.replacements)

    def __getitem__(self, which: slice) -> "ImageBatch":
        return self.take(range(len(self))[which])

    def take(self, indices: Sequence[int]) -> "ImageBatch":
        """The batch of the images at ``indices`` (in that order)."""
        indices = list(indices)
        if indices == list(range(len(self))):
            return self
        tensors, bounds = {}, {}
        for key, value in self.tensors.items():
            spans = [self.bounds[key][i] for i in indices]
            rows = torch.cat([torch.arange(a, b) for a, b in spans]) if spans else torch.empty(0, dtype=torch.long)
            tensors[key] = value.index_select(0, rows.to(value.device))
            bounds[key] = _spans([b - a for a, b in spans])
        images = [self.images[i] for i in indices] if self.images is not None else None
        return ImageBatch(tensors, bounds, [self.replacements[i] for i in indices], images)

    def pin_memory(self) -> "ImageBatch":
        """Called by the DataLoader's pinning thread: page-locked tensors copy to the device asynchronously."""
        return ImageBatch({k: v.pin_memory() for k, v in self.tensors.items()}, self.bounds, self.replacements,
                          self.images, True)

    def to(self, device: torch.device, dtype: torch.dtype | None = None) -> "ImageBatch":
        """The batch on ``device``, floating-point tensors in ``dtype``; the copy does not block the host when
        the batch is pinned."""
        moved = {}
        for key, value in self.tensors.items():
            cast = dtype if dtype is not None and value.is_floating_point() else None
            moved[key] = value.to(device, dtype=cast, non_blocking=self._pinned)
        return ImageBatch(moved, self.bounds, self.replacements, self.images)


def collate(parts: Sequence[ProcessedImage]) -> ImageBatch:
    """Join processed images as the processor joins a batch: concatenated along the first dimension, other
    dimensions zero-padded to the largest (LLaVA-NeXT's patch count varies with the aspect ratio)."""
    tensors, bounds = {}, {}
    for key in parts[0].tensors if parts else ():
        values = [p.tensors[key] for p in parts]
        widest = [max(v.shape[d] for v in values) for d in range(1, values[0].dim())]
        padded = [_pad_to(v, widest) for v in values]
        tensors[key] = torch.cat(padded) if len(padded) > 1 else padded[0]
        bounds[key] = _spans([v.shape[0] for v in values])
    images = [p.image for p in parts] if any(p.image is not None for p in parts) else None
    return ImageBatch(tensors, bounds, [p.replacement for p in parts], images)


def join_images(images: list) -> list | ImageBatch:
    """A loader batch's images: an ``ImageBatch`` when the workers processed them, else the decoded images."""
    return collate(images) if images and isinstance(images[0], ProcessedImage) else images


def _pad_to(value: torch.Tensor, widest: list[int]) -> torch.Tensor:
    missing = [w - s for w, s in zip(widest, value.shape[1:])]
    if not any(missing):
        return value
    pad = [amount for m in reversed(missing) for amount in (0, m)]
    return torch.nn.functional.pad(value, pad)


def _spans(lengths: Sequence[int]) -> list[tuple[int, int]]:
    spans, start = [], 0
    for n in lengths:
        spans.append((start, start + n))
        start += n
    return spans
