"""Image preprocessing declared by a preset: resize policy, input size, mean/std, as a picklable transform."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from focus_eval.errors import FocusError

POLICIES = ("squash", "shorter_side_then_center_crop", "longest_side_then_pad")
INTERPOLATIONS = {"nearest": 0, "lanczos": 1, "bilinear": 2, "bicubic": 3}
PAD_ANCHORS = ("top_left", "center")
_KEYS = {"size", "mean", "std", "resize", "interpolation", "resize_to", "pad_anchor"}


@dataclass(frozen=True)
class ImageTransform:
    """PIL RGB image -> float32 tensor [3, size, size], exactly as the preset's model was trained to see it.

    Holds plain values only, so DataLoader worker processes can pickle it without any model attached.
    """

    size: int
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    resize: str = "squash"
    interpolation: str = "bicubic"
    resize_to: int | None = None  # shorter side before the centre crop (e.g. 256 for a 224 crop)
    pad_anchor: str = "top_left"

    @property
    def source_size(self) -> int:
        """Smallest shorter side the input should keep so no step upsamples a pre-shrunk image."""
        return max(self.size, self.resize_to or 0)

    def __call__(self, image):
        """The whole transform on the CPU: ``normalize(pixels(image))``."""
        return self.normalize(self.pixels(image))

    def pixels(self, image):
        """The worker-side half: resize, crop or pad to uint8 [3, size, size]. uint8 is a quarter of the bytes
        of float32 through worker shared memory and the host-to-device copy."""
        import torch

        array = np.asarray(self.geometry(image.convert("RGB")), dtype=np.uint8)
        if self.resize == "longest_side_then_pad":
            array = self._pad(array)
        return torch.from_numpy(np.ascontiguousarray(array.transpose(2, 0, 1)))

    def normalize(self, pixels):
        """The device-side half: uint8 [..., 3, H, W] -> float32 scaled to [0, 1], minus mean, over std."""
        import torch

        mean = torch.tensor(self.mean, dtype=torch.float32, device=pixels.device).view(3, 1, 1)
        std = torch.tensor(self.std, dtype=torch.float32, device=pixels.device).view(3, 1, 1)
        # the same three steps in place on one buffer: the same numbers, without three full-size temporaries
        # (a third of the time of the model's input on a CPU)
        scaled = pixels.to(torch.float32, copy=True)
        return scaled.div_(255.0).sub_(mean).div_(std)

    def geometry(self, image):
        """Resize (and crop) a PIL image per the policy; padding happens on the array afterwards."""
        resample = INTERPOLATIONS[self.interpolation]
        width, height = image.size
        if self.resize == "squash":
            return image.resize((self.size, self.size), resample=resample)
        if self.resize == "shorter_side_then_center_crop":
            target = self.resize_to or self.size
            short, long = min(width, height), max(width, height)
            new_long = int(target * long / short)
            new = (target, new_long) if width <= height else (new_long, target)
            image = image.resize(new, resample=resample)
            return _center_crop(image, self.size)
        scale = max(width, height) / self.size
        new = (max(1, int(width / scale)), max(1, int(height / scale)))
        return image.resize(new, resample=resample)

    def _pad(self, array: np.ndarray) -> np.ndarray:
        height, width = array.shape[:2]
        canvas = np.zeros((self.size, self.size, 3), dtype=array.dtype)
        top, left = (0, 0) if self.pad_anchor == "top_left" else ((self.size - height) // 2, (self.size - width) // 2)
        canvas[top:top + height, left:left + width] = array
        return canvas

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["mean"], d["std"] = list(self.mean), list(self.std)
        return d


def _center_crop(image, size: int):
    width, height = image.size
    top = int(round((height - size) / 2.0))
    left = int(round((width - size) / 2.0))
    return image.crop((left, top, left + size, top + size))


def transform_from_preset(preset) -> ImageTransform:
    """Validate ``preset.preprocessing`` and build its transform; a missing or unknown field is an error."""
    spec = dict(preset.preprocessing or {})
    where = f"preset {preset.name!r} ({preset.path}) preprocessing"
    unknown = set(spec) - _KEYS
    if unknown:
        raise FocusError(f"{where}: unknown keys {sorted(unknown)}; known: {sorted(_KEYS)}")
    for key in ("size", "mean", "std", "resize"):
        if spec.get(key) is None:
            raise FocusError(f"{where}: '{key}' is required")
    if spec["resize"] not in POLICIES:
        raise FocusError(f"{where}: resize must be one of {list(POLICIES)}, got {spec['resize']!r}")
    interpolation = spec.get("interpolation", "bicubic")
    if interpolation not in INTERPOLATIONS:
        raise FocusError(f"{where}: interpolation must be one of {list(INTERPOLATIONS)}, got {interpolation!r}")
    anchor = spec.get("pad_anchor", "top_left")
    if anchor not in PAD_ANCHORS:
        raise FocusError(f"{where}: pad_anchor must be one of {list(PAD_ANCHORS)}, got {anchor!r}")
    mean, std = _triple(spec["mean"], where, "mean"), _triple(spec["std"], where, "std")
    if min(std) <= 0:
        raise FocusError(f"{where}: std must be positive")
    resize_to = spec.get("resize_to")
    if resize_to is not None and spec["resize"] != "shorter_side_then_center_crop":
        raise FocusError(f"{where}: resize_to only applies to resize: shorter_side_then_center_crop")
    return ImageTransform(size=pixels(spec["size"], where, "size"), mean=mean, std=std, resize=spec["resize"],
                          interpolation=interpolation, resize_to=pixels(resize_to, where, "resize_to") if resize_to
                          else None, pad_anchor=anchor)


def pixels(value, where: str, key: str) -> int:
    """A side length in pixels: a positive whole number (``448`` or ``"448"``)."""
    number = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and value.strip().isdigit():
        number = int(value)
    if number is None or number < 1:
        raise FocusError(f"{where}: '{key}' must be a positive whole number of pixels, got {value!r}")
    return number


def _triple(value, where: str, key: str) -> tuple[float, float, float]:
    if isinstance(value, (int, float)):
        value = [value] * 3
    if not isinstance(value, (list, tuple)) or len(value) != 3:
        raise FocusError(f"{where}: '{key}' must be three numbers, got {value!r}")
    try:
        return tuple(float(v) for v in value)
    except (TypeError, ValueError):
        raise FocusError(f"{where}: '{key}' must be three numbers, got {value!r}") from None


def processor_view(processor) -> dict[str, Any]:
    """The geometry and statistics a Hugging Face image processor applies, in this module's vocabulary."""
    def field(name, default=None):
        value = getattr(processor, name, default)
        return value if value is not None else default

    size, crop = _as_dict(field("size")), _as_dict(field("crop_size"))
    view: dict[str, Any] = {"mean": [float(v) for v in field("image_mean", [0, 0, 0])],
                            "std": [float(v) for v in field("image_std", [1, 1, 1])],
                            "interpolation": _interpolation_name(field("resample"))}
    if field("do_center_crop", False):
        view.update(resize="shorter_side_then_center_crop", size=crop.get("height"),
                    resize_to=size.get("shortest_edge"))
    elif size.get("shortest_edge"):
        view.update(resize="shorter_side_without_crop", size=size.get("shortest_edge"))
    elif size.get("height") != size.get("width"):
        view.update(resize="non_square", size=(size.get("height"), size.get("width")))
    else:
        view.update(resize="squash", size=size.get("height"))
    if not field("do_normalize", True):
        view.update(mean=[0.0, 0.0, 0.0], std=[1.0, 1.0, 1.0])
    rescale = float(field("rescale_factor", 1 / 255)) if field("do_rescale", True) else 1.0
    view["rescale_factor"] = rescale
    return view


def _as_dict(value) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    if isinstance(value, int):
        return {"height": value, "width": value}
    return {k: getattr(value, k) for k in ("height", "width", "shortest_edge", "longest_edge")
            if getattr(value, k, None) is not None}


def _interpolation_name(resample) -> str | None:
    if resample is None:
        return None
    value = getattr(resample, "value", resample)
    if isinstance(value, str):
        return value.lower()
    names = {v: k for k, v in INTERPOLATIONS.items()}
    return names.get(int(value), str(value))


def check_against_processor(transform: ImageTransform, processor, where: str) -> None:
    """Fail when the preset's preprocessing differs from the processor the checkpoint ships with."""
    view = processor_view(processor)
    declared = transform.to_dict()
    problems = []
    for key in ("resize", "size", "interpolation"):
        if view.get(key) is not None and view[key] != declared[key]:
            problems.append(f"{key}: preset {declared[key]!r}, checkpoint {view[key]!r}")
    if view.get("resize") == "shorter_side_then_center_crop" and view.get("resize_to") != (
            declared["resize_to"] or declared["size"]):
        problems.append(f"resize_to: preset {declared['resize_to']!r}, checkpoint {view.get('resize_to')!r}")
    for key in ("mean", "std"):
        if any(not math.isclose(a, b, abs_tol=1e-4) for a, b in zip(view[key], declared[key])):
            problems.append(f"{key}: preset {declared[key]}, checkpoint {view[key]}")
    if not math.isclose(view["rescale_factor"], 1 / 255, rel_tol=1e-4):
        problems.append(f"rescale_factor: checkpoint {view['rescale_factor']} (the transform scales by 1/255)")
    if problems:
        raise FocusError(f"{where}: the preset's preprocessing differs from the checkpoint's image processor: "
                         + "; ".join(problems)
                         + ". Fix the preset, or pass --model-args check_processor=false to keep the preset's.")
