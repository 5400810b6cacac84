"""The benchmark's inputs: realistic fundus JPEGs made from a real photograph, and the records and prepared
copies the runner's own loops read.

The photograph is scikit-image's ``retina`` sample (a CC0 colour fundus photo, about 1,400 px square). Each
file places it, resized to the frame height, on a black frame of the requested size (2048 x 1536 is a common
fundus-camera frame) with a small rotation, mirror, shift, brightness, saturation, sensor noise and JPEG quality
of its own, so files differ the way photos of different eyes do and decode as slowly as real photos (rendered
discs compress far better and decode about 1.5 times faster)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from focus_eval.errors import FocusError

DATASET = "bench"


def retina_photo():
    """The CC0 fundus photograph shipped with scikit-image, as a PIL image."""
    try:
        from skimage import data
    except ImportError:
        raise FocusError("the benchmark's inputs are made from scikit-image's CC0 fundus photo: "
                         "pip install scikit-image (it is part of focus-eval[test])") from None
    from PIL import Image

    return Image.fromarray(data.retina())


def fundus_jpegs(folder: Path, size: tuple[int, int], count: int, seed: int = 0) -> list[Path]:
    """``count`` different fundus JPEGs of ``size`` (width, height) under ``folder``."""
    import numpy as np
    from PIL import Image, ImageEnhance

    rng = np.random.default_rng(seed)
    photo = retina_photo()
    width, height = size
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        side = max(8, int(min(width, height) * rng.uniform(0.94, 1.04)))
        eye = photo.rotate(float(rng.uniform(-8, 8)), resample=Image.Resampling.BICUBIC)
        eye = eye.resize((side, side), Image.Resampling.BICUBIC)
        if rng.random() < 0.5:
            eye = eye.transpose(Image.Transpose.FLIP_LEFT_RIGHT)  # a left eye
        eye = ImageEnhance.Brightness(eye).enhance(float(rng.uniform(0.8, 1.2)))
        eye = ImageEnhance.Color(eye).enhance(float(rng.uniform(0.8, 1.2)))
        frame = Image.new("RGB", (width, height))
        shift = int(rng.integers(-(width // 40), width // 40 + 1))
        frame.paste(eye, ((width - side) // 2 + shift, (height - side) // 2))
        noisy = np.asarray(frame, dtype=np.float32) + rng.normal(0.0, 2.0, (height, width, 3))
        path = folder / f"fundus_{width}x{height}_{i}.jpg"
        Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8)).save(path, quality=int(rng.integers(88, 96)))
        paths.append(path)
    return paths


def bench_records(root: Path, files: list[Path], count: int) -> list[Any]:
    """``count`` image records (ids img00000, ...) cycling through ``files``, which lie in ``root/bench``."""
    from focus_eval.data.records import ImageRecord

    folder = root / DATASET
    return [ImageRecord(dataset=DATASET, image_id=f"img{i:05d}", patient_id=f"p{i:05d}", split="test", dr=i % 2,
                        path=files[i % len(files)], relpath=files[i % len(files)].relative_to(folder).as_posix())
            for i in range(count)]


def prepared_copies(root: Path, raw: list[Path], size: int, workers: int) -> list[Path]:
    """The prepared copies of ``raw`` (files in ``root/bench``) at ``size`` px, written by ``datasets
    prepare``'s own code (fundus crop, resize) into the data root's prepared cache."""
    from focus_eval.data.prepare import prepare_records, prepared_path

    records = bench_records(root, raw, len(raw))
    prepare_records(records, root, DATASET, size, workers=max(1, workers), progress=False)
    return [prepared_path(root, DATASET, size, r) for r in records]


class OneProcess:
    """The process state the runner's loops expect, for a single process."""

    is_main_process = True
    process_index = 0
    num_processes = 1

    @staticmethod
    def wait_for_everyone() -> None:
        return None
