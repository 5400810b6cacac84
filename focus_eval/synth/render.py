"""Procedural colour-fundus renderer: retina, optic disc and cup, vessels, macula, DR lesions, quality and
device effects, deterministic for a seed."""

from __future__ import annotations

import io
import math
import zlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

from focus_eval.data.images import open_image
from focus_eval.synth import lesions
from focus_eval.synth.scene import Scene

DEVICES = ("desktop", "mobile")
LATERALITIES = ("OD", "OS")
QUALITIES = ("adequate", "inadequate")

# Independent random streams per seed: changing the grade or the cup of a spec leaves the anatomy (and every
# other layer) of the same seed untouched, so the effect of one label can be measured in isolation.
_ANATOMY, _LESIONS, _QUALITY, _SENSOR = 1, 2, 3, 4


@dataclass(frozen=True)
class FundusSpec:
    """What one synthetic photograph shows. ``cdr`` is the vertical cup-to-disc ratio; ``age`` (years)
    yellows the lens a little; ``sex`` is metadata only and does not change the picture."""

    dr_grade: int = 0
    dme: bool = False
    cdr: float = 0.3
    laterality: str = "OD"
    quality: str = "adequate"
    device: str = "desktop"
    size: int = 256
    age: float | None = None
    sex: str | None = None
    # the lesions to draw, as (kind, count) pairs (None: counts drawn for the grade), and their opacity (0, 1]
    lesions: tuple[tuple[str, int], ...] | None = None
    lesion_contrast: float = 1.0

    def __post_init__(self):
        if self.dr_grade not in (0, 1, 2, 3, 4):
            raise ValueError(f"dr_grade must be an ICDR grade 0-4, got {self.dr_grade!r}")
        if not 0.05 <= self.cdr <= 0.95:
            raise ValueError(f"cdr must lie in [0.05, 0.95], got {self.cdr!r}")
        for name, value, allowed in (("laterality", self.laterality, LATERALITIES),
                                     ("quality", self.quality, QUALITIES), ("device", self.device, DEVICES)):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
        if not 32 <= self.size <= 4096:
            raise ValueError(f"size must lie in [32, 4096] pixels, got {self.size!r}")
        if not 0 < self.lesion_contrast <= 1:
            raise ValueError(f"lesion_contrast must lie in (0, 1], got {self.lesion_contrast!r}")


@dataclass(frozen=True)
class Device:
    """A camera: a narrower field of view magnifies the posterior pole (``zoom``) inside a smaller visible
    circle; ``detail`` is the native resolution as a fraction of the output size; ``lesion_contrast`` scales
    how strongly small lesions stand out (a phone's optics and sensor wash them out)."""

    zoom: float
    field_radius: float
    detail: float
    gains: tuple[float, float, float]
    contrast: float
    noise: float
    jpeg_quality: int
    lesion_contrast: float = 1.0


DEVICE_PROFILES = {
    "desktop": Device(zoom=1.0, field_radius=0.95, detail=1.0, gains=(1.0, 1.0, 1.0), contrast=1.0,
                      noise=0.0, jpeg_quality=92),
    "mobile": Device(zoom=1.12, field_radius=0.88, detail=0.55, gains=(0.88, 1.1, 0.78), contrast=0.82,
                     noise=0.03, jpeg_quality=45, lesion_contrast=0.65),
}


def render_fundus(spec: FundusSpec, seed: int) -> Image.Image:
    """Render one RGB fundus photograph of ``spec.size`` pixels; the same (spec, seed) gives the same pixels."""
    device = DEVICE_PROFILES[spec.device]
    width = max(32, round(spec.size * device.detail))
    scene = _scene(spec, device, width, np.random.default_rng([seed, _ANATOMY]))
    anatomy_rng = np.random.default_rng([seed, _ANATOMY, 1])
    rgb = _background(scene, anatomy_rng)
    rgb = _optic_disc(rgb, scene, spec.cdr)
    rgb = _vessels(rgb, scene, anatomy_rng)
    counts = None if spec.lesions is None else dict(spec.lesions)
    rgb = lesions.draw(rgb, scene, spec.dr_grade, spec.dme, np.random.default_rng([seed, _LESIONS]), counts,
                       spec.lesion_contrast * device.lesion_contrast)
    rgb = _lens(rgb, spec.age)
    if spec.quality == "inadequate":
        rgb = _degrade(rgb, scene, np.random.default_rng([seed, _QUALITY]))
    rgb = _sensor(rgb, scene, device, np.random.default_rng([seed, _SENSOR]))
    image = Image.fromarray(np.clip(rgb * 255 + 0.5, 0, 255).astype(np.uint8), "RGB")
    if width != spec.size:
        image = image.resize((spec.size, spec.size), Image.BILINEAR)
    return _jpeg_roundtrip(image, device.jpeg_quality)


@lru_cache(maxsize=16)
def _grid(width: int, zoom: float, field_radius: float) -> tuple[np.ndarray, ...]:
    """Pixel-centre coordinates and the visible-field mask, shared by every image of one size and device."""
    coords = (np.arange(width, dtype=np.float32) + 0.5) / width * 2 - 1
    x, y = np.meshgrid(coords, coords)
    radius = np.sqrt(x * x + y * y)
    field = np.clip((field_radius - radius) * width / 2.4 + 0.5, 0, 1)[..., None]
    arrays = (x, y, x / zoom, y / zoom, radius, field)
    for a in arrays:
        a.setflags(write=False)
    return arrays


def _scene(spec: FundusSpec, device: Device, width: int, rng: np.random.Generator) -> Scene:
    x, y, u, v, radius, _ = _grid(width, device.zoom, device.field_radius)
    side = 1 if spec.laterality == "OD" else -1  # the disc sits nasally: image right for a right eye
    fovea = (float(rng.uniform(-0.04, 0.04)), float(rng.uniform(0.0, 0.05)))
    disc = (fovea[0] + side * float(rng.uniform(0.58, 0.64)), fovea[1] - float(rng.uniform(0.02, 0.06)))
    return Scene(width=width, zoom=device.zoom, field_radius=device.field_radius, x=x, y=y, u=u, v=v,
                 radius=radius, side=side, fovea=fovea, disc=disc, disc_radius=float(rng.uniform(0.115, 0.13)))


def _background(scene: Scene, rng: np.random.Generator) -> np.ndarray:
    pigment = rng.uniform(0, 1)
    light = np.array([0.86, 0.42, 0.18], np.float32)
    dark = np.array([0.64, 0.25, 0.10], np.float32)
    base = light * (1 - pigment) + dark * pigment
    # broad patches of pigment (on all channels) and a finer choroidal mottle (on red), upsampled together
    broad = _upsample(rng.standard_normal((7, 7)).astype(np.float32), 28)
    fine = rng.standard_normal((28, 28)).astype(np.float32)
    texture, choroid = (1 + _upsample(n, scene.width) for n in (0.06 * broad, 0.035 * fine))
    r2 = scene.radius ** 2
    tilt_x, tilt_y = (float(t) for t in rng.uniform(-0.06, 0.06, size=2))
    illumination = np.clip(1.08 - 0.45 * r2 * np.sqrt(scene.radius) + tilt_x * scene.x + tilt_y * scene.y, 0.2, 1.2)
    fu, fv = scene.fovea
    d2 = (scene.u - fu) ** 2 + (scene.v - fv) ** 2
    macula = 1 - 0.30 * _bump(d2, 0.11) - 0.16 * _bump(d2, 0.028)
    scene.illumination = illumination.astype(np.float32)
    shade = (illumination * texture * macula)[..., None]
    rgb = base * shade
    rgb[..., 0] *= choroid
    return rgb


def _upsample(values: np.ndarray, width: int) -> np.ndarray:
    return np.asarray(Image.fromarray(values, "F").resize((width, width), Image.BICUBIC))


def _bump(d2: np.ndarray, sigma: float) -> np.ndarray:
    """A smooth bump shaped like a Gaussian of width ``sigma`` (cheaper than exp on a full image)."""
    return np.square(np.clip(1 - d2 * (1 / (9 * sigma * sigma)), 0, 1)) ** 2


def _window(scene: Scene, centre: tuple[float, float], reach: float) -> tuple[slice, slice]:
    """Pixel rows and columns within ``reach`` anatomy units of ``centre`` (work is confined to them)."""
    cx, cy = scene.to_px(*centre)
    r = reach * scene.scale + 2
    clamp = lambda a: int(min(max(a, 0), scene.width))  # noqa: E731
    return slice(clamp(cy - r), clamp(cy + r + 1)), slice(clamp(cx - r), clamp(cx + r + 1))


def _ellipse_mask(u: np.ndarray, v: np.ndarray, centre: tuple[float, float], rx: float, ry: float,
                  softness: float) -> np.ndarray:
    rho = np.sqrt(((u - centre[0]) / rx) ** 2 + ((v - centre[1]) / ry) ** 2)
    return (1 / (1 + np.exp(np.clip((rho - 1) / softness, -30, 30))))[..., None]


def _optic_disc(rgb: np.ndarray, scene: Scene, cdr: float) -> np.ndarray:
    rd = scene.disc_radius
    rows, cols = _window(scene, scene.disc, 1.6 * rd)
    u, v, patch = scene.u[rows, cols], scene.v[rows, cols], rgb[rows, cols]
    disc = _ellipse_mask(u, v, scene.disc, rd, rd * 1.1, 0.07)
    rim = np.array([1.0, 0.64, 0.46], np.float32)
    patch = patch * (1 - disc) + rim * np.clip(scene.illumination[rows, cols], 0.5, 1.1)[..., None] * disc
    # The cup sits slightly temporal in the disc; vertical CDR sets its height, it is a little narrower.
    centre = (scene.disc[0] - scene.side * 0.08 * rd, scene.disc[1])
    cup = _ellipse_mask(u, v, centre, cdr * rd * 0.9, cdr * rd * 1.1, 0.12)
    rgb[rows, cols] = patch * (1 - cup) + np.array([1.0, 0.96, 0.86], np.float32) * cup
    scene.cup = (rows, cols, cup)
    return rgb


def _vessel_paths(scene: Scene, rng: np.random.Generator) -> list[tuple[np.ndarray, float, str]]:
    """Centre lines (anatomy coordinates) with widths: an artery and a vein per arcade, branching."""
    temporal = math.pi if scene.side > 0 else 0.0
    nasal = math.pi - temporal
    paths: list[tuple[np.ndarray, float, str]] = []
    for kind, width, height in (("vein", 0.019, 0.42), ("artery", 0.013, 0.36)):
        for vertical in (-1, 1):  # -1 superior, +1 inferior
            _arcade(scene, rng, vertical, height + rng.uniform(-0.03, 0.03), width, kind, paths)
            up = vertical * math.pi / 2
            start = up + _wrap(nasal - up) * (0.3 + (0.15 if kind == "artery" else 0) + rng.uniform(-0.05, 0.05))
            _grow(scene, rng, scene.disc, start, nasal, 0.04, width * 0.8, 26, 0, kind, paths)
        for _ in range(2):  # small vessels heading straight to the macula and the nasal side
            heading = (temporal if rng.random() < 0.6 else nasal) + rng.uniform(-0.5, 0.5)
            _grow(scene, rng, scene.disc, heading, heading, 0.0, width * 0.5, 12, 2, kind, paths)
    return paths


def _wrap(angle: float) -> float:
    return (angle + math.pi) % (2 * math.pi) - math.pi


def _arcade(scene: Scene, rng: np.random.Generator, vertical: int, height: float, width: float, kind: str,
            out: list) -> None:
    """A temporal arcade: leaves the disc vertically and sweeps around the macula on an elliptical arc."""
    du, dv = scene.disc
    cu = scene.fovea[0] - scene.side * 0.12
    reach = abs(du - cu)
    theta = np.linspace(0, rng.uniform(2.0, 2.4), 48)
    wobble = 1 + np.cumsum(rng.normal(0, 0.012, theta.size))
    u = cu + scene.side * reach * np.cos(theta) * wobble
    v = dv + vertical * height * np.sin(theta) * wobble
    points = np.stack([u, v], axis=1)[1:]
    _add(scene, rng, scene.disc, points, width, 50, 0, kind, out)


def _grow(scene: Scene, rng: np.random.Generator, start: tuple[float, float], heading: float, target: float,
          turn: float, width: float, steps: int, depth: int, kind: str, out: list) -> None:
    """A vessel that starts at ``heading`` and bends towards ``target`` at rate ``turn``, with some wander."""
    i = np.arange(1, steps + 1)
    headings = target + _wrap(heading - target) * np.exp(-turn * i) + np.cumsum(rng.normal(0, 0.05, steps))
    points = np.cumsum(np.stack([np.cos(headings), np.sin(headings)], axis=1) * 0.026, axis=0) + start
    _add(scene, rng, start, points, width, steps, depth, kind, out)


def _add(scene: Scene, rng: np.random.Generator, start: tuple[float, float], points: np.ndarray, width: float,
         steps: int, depth: int, kind: str, out: list) -> None:
    """Keep ``points`` up to the foveal avascular zone or the image edge, and sprout side branches."""
    to_fovea = np.hypot(points[:, 0] - scene.fovea[0], points[:, 1] - scene.fovea[1])
    stop = np.nonzero((to_fovea < 0.075) | (np.hypot(points[:, 0], points[:, 1]) > 1.25))[0]
    if len(stop):
        points = points[: stop[0]]
    if len(points) < 2:
        return
    out.append((np.vstack([start, points]), width, kind))
    if depth >= 2:
        return
    delta = np.diff(np.vstack([start, points]), axis=0)
    headings = np.arctan2(delta[:, 1], delta[:, 0])
    for k in np.nonzero(rng.random(len(points)) < (0.065 if depth == 0 else 0.03))[0]:
        if k < 3:
            continue
        branch = headings[k] + rng.choice([-1.0, 1.0]) * rng.uniform(0.45, 1.0)
        _grow(scene, rng, tuple(points[k]), branch, branch, 0.0, width * 0.62, max(4, int(steps * 0.4)),
              depth + 1, kind, out)


def _vessels(rgb: np.ndarray, scene: Scene, rng: np.random.Generator) -> np.ndarray:
    # one mask: arteries drawn first at a lower value, veins (darker, wider) over them
    mask = Image.new("L", (scene.width, scene.width))
    draw = ImageDraw.Draw(mask)
    paths = sorted(_vessel_paths(scene, rng), key=lambda p: p[2] == "vein")
    for points, width, kind in paths:
        pixels = [tuple(p) for p in scene.to_px_array(points).tolist()]
        value = 255 if kind == "vein" else 165
        for j in range(0, len(pixels) - 1, 6):
            taper = 1 - 0.45 * j / len(pixels)
            draw.line(pixels[j: j + 7], fill=value, width=max(1, round(width * taper * scene.scale)), joint="curve")
    m = np.asarray(mask.filter(ImageFilter.BoxBlur(max(0.5, scene.width / 400))), np.float32)[..., None]
    if scene.cup is not None:  # vessels dive into the cup and are barely seen inside it
        rows, cols, cup = scene.cup
        m[rows, cols] *= 1 - 0.8 * cup
    factor = m * (np.array([-0.50, -0.78, -0.70], np.float32) * (0.85 / 255))  # 1 - tint, at 85 % opacity
    factor += 1
    rgb *= factor
    return rgb


def _lens(rgb: np.ndarray, age: float | None) -> np.ndarray:
    if age is None:
        return rgb
    yellowing = float(np.clip((age - 40) / 45, 0, 1))
    return rgb * np.array([1 - 0.06 * yellowing, 1 - 0.08 * yellowing, 1 - 0.3 * yellowing], np.float32)


def _degrade(rgb: np.ndarray, scene: Scene, rng: np.random.Generator) -> np.ndarray:
    """Ungradable-looking photographs: defocus, uneven illumination and/or media and lash artefacts."""
    # always one global defect (defocus or bad illumination), sometimes more, sometimes lashes and dust too
    kinds = {("blur", "illumination")[int(rng.integers(2))]}
    kinds |= {k for k in ("blur", "illumination", "artefact") if rng.random() < 0.35}
    if "illumination" in kinds:
        angle = rng.uniform(0, 2 * math.pi)
        along = scene.x * math.cos(angle) + scene.y * math.sin(angle)
        shadow = 0.15 + 0.85 / (1 + np.exp((along - rng.uniform(-0.25, 0.2)) / 0.16))
        haze = (rng.uniform(0.1, 0.22) * np.clip(scene.radius ** 2, 0, 1))[..., None]  # stray light near the rim
        rgb = rgb * (shadow * rng.uniform(0.6, 0.85))[..., None] + haze * np.array([0.8, 0.75, 0.7], np.float32)
    if "artefact" in kinds:
        rgb = _artefacts(rgb, scene, rng)
    if "blur" in kinds:
        radius = scene.width * rng.uniform(0.012, 0.022)
        image = Image.fromarray(np.clip(rgb * 255 + 0.5, 0, 255).astype(np.uint8), "RGB")
        rgb = np.asarray(image.filter(ImageFilter.GaussianBlur(radius)), np.float32) / 255
    return rgb.astype(np.float32)


def _artefacts(rgb: np.ndarray, scene: Scene, rng: np.random.Generator) -> np.ndarray:
    w = scene.width
    mask = Image.new("L", (w, w))
    draw = ImageDraw.Draw(mask)
    for _ in range(rng.integers(2, 5)):  # eyelash shadows reaching in from the upper or lower edge
        x0 = rng.uniform(0.2, 0.8) * w
        y0 = (0.02 if rng.random() < 0.5 else 0.98) * w
        bend = rng.uniform(-0.15, 0.15) * w
        reach = rng.uniform(0.2, 0.4) * w * (1 if y0 < w / 2 else -1)
        draw.line([(x0, y0), (x0 + bend / 2, y0 + reach / 2), (x0 + bend, y0 + reach)],
                  fill=200, width=max(2, round(w * 0.025)), joint="curve")
    for _ in range(rng.integers(3, 8)):  # dust on the optics
        cx, cy = rng.uniform(0.2, 0.8, size=2) * w
        r = rng.uniform(0.015, 0.035) * w
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=int(rng.integers(90, 160)))
    m = np.asarray(mask.filter(ImageFilter.GaussianBlur(w * 0.012)), np.float32)[..., None] / 255
    return rgb * (1 - 0.8 * m)


def _sensor(rgb: np.ndarray, scene: Scene, device: Device, rng: np.random.Generator) -> np.ndarray:
    if device.contrast != 1 or device.gains != (1.0, 1.0, 1.0):
        gains = np.array(device.gains, np.float32)
        mean = rgb.mean(axis=(0, 1), keepdims=True)
        rgb = rgb * (gains * device.contrast) + mean * (gains * (1 - device.contrast))
    if device.noise > 0:
        rgb = rgb + device.noise * rng.standard_normal(rgb.shape, dtype=np.float32)
    return rgb * _grid(scene.width, device.zoom, device.field_radius)[5]


def _jpeg_roundtrip(image: Image.Image, quality: int) -> Image.Image:
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=quality)
    return open_image(buffer.getvalue())


# --- labels -> picture, for the miniature raw layouts of the real datasets ---------------------------------

_GRADE_KEYS = ("dr_grade", "icdr", "grade", "retinopathy_grade")
_DME_KEYS = ("dme", "edema", "macular_edema", "risk_of_macular_edema")
_GLAUCOMA_KEYS = ("glaucoma", "gon")
_CDR_KEYS = ("cdr", "vcdr")
_INADEQUATE = {"inadequate", "no", "poor", "bad", "ungradable", "0", "false"}
_ADEQUATE = {"adequate", "yes", "good", "gradable", "1", "true"}


def fixture_image(labels: Mapping[str, object], seed: int | None = None, size: int = 96) -> Image.Image:
    """A small fundus picture showing ``labels``, for miniature raw layouts.

    Keys read (case-insensitive; None or empty values are ignored): dr_grade / icdr / grade /
    retinopathy_grade (ICDR 0-4), dr and referable_dr (0/1, drawn as grade 2 and 3 when no grade is given),
    dme / edema / macular_edema / risk_of_macular_edema (>= 1 draws macular exudates), cdr / vcdr, else
    glaucoma / gon (0/1: cup 0.3 or 0.78), quality (adequate/inadequate, yes/no), laterality / eye (OD/OS,
    right/left), device (desktop/mobile), age, sex. Other keys are ignored; a known key with a value it cannot
    read is a ValueError. ``seed`` defaults to ``labels["seed"]``, else to a checksum of the labels."""
    if seed is None:
        seed = labels["seed"] if isinstance(labels.get("seed"), int) else labels_checksum(labels)
    return render_fundus(spec_from_labels(labels, size), int(seed))


def labels_checksum(labels: Mapping[str, object]) -> int:
    """A stable 32-bit number from a labels dict (same labels, same number, in any key order)."""
    return zlib.crc32(repr(sorted((str(k), str(v)) for k, v in labels.items())).encode())


def spec_from_labels(labels: Mapping[str, object], size: int = 96) -> FundusSpec:
    """Map a raw-label dict to a FundusSpec (see ``fixture_image``)."""
    norm = {str(k).strip().lower(): v for k, v in labels.items() if v is not None and str(v).strip() != ""}
    grade = _first_number(norm, _GRADE_KEYS)
    if grade is None and "dr" in norm:
        grade = 2 * _binary(norm, "dr")  # a binary DR label shows as moderate NPDR
    grade = 0 if grade is None else int(grade)
    if "referable_dr" in norm and _binary(norm, "referable_dr"):
        grade = max(grade, 3)
    dme = _first_number(norm, _DME_KEYS)
    cdr = _first_number(norm, _CDR_KEYS)
    if cdr is None:
        glaucoma = next((_binary(norm, k) for k in _GLAUCOMA_KEYS if k in norm), 0)
        cdr = 0.78 if glaucoma else 0.3
    return FundusSpec(dr_grade=grade, dme=bool(dme and dme >= 1), cdr=float(cdr),
                      laterality=_laterality(norm.get("laterality", norm.get("eye"))),
                      quality=_quality(norm.get("quality")), device=str(norm.get("device", "desktop")),
                      size=size, age=_first_number(norm, ("age",)), sex=norm.get("sex"))


def _first_number(norm: dict, keys: tuple[str, ...]) -> float | None:
    for key in keys:
        if key in norm:
            try:
                return float(str(norm[key]).replace(",", "."))
            except ValueError:
                raise ValueError(f"fixture_image: {key}={norm[key]!r} is not a number") from None
    return None


def _binary(norm: dict, key: str) -> int:
    value = _first_number(norm, (key,))
    if value not in (0.0, 1.0):
        raise ValueError(f"fixture_image: {key}={norm[key]!r} is not 0 or 1")
    return int(value)


def _laterality(value: object) -> str:
    if value is None:
        return "OD"
    text = str(value).strip().lower()
    if text in {"od", "r", "right", "re"}:
        return "OD"
    if text in {"os", "l", "left", "le"}:
        return "OS"
    raise ValueError(f"fixture_image: laterality {value!r} is not OD/OS/right/left")


def _quality(value: object) -> str:
    if value is None:
        return "adequate"
    text = str(value).strip().lower()
    if text.endswith(".0"):
        text = text[:-2]
    if text in _INADEQUATE:
        return "inadequate"
    if text in _ADEQUATE:
        return "adequate"
    raise ValueError(f"fixture_image: quality {value!r} is neither adequate nor inadequate")
