"""Reader for Retinal-Lesions (Wei et al. 2020): 1,593 EyePACS images at 896 x 896 with a DR grade and lesion
masks for eight lesions; no official split.

Raw layout, inside ``retinal-lesions-v20191227/`` (found at any depth by ``dr_grades.csv``)::

    dr_grades.csv                      image id, kaggle label, our label
    images_896x896/<id>.jpg            <id> = <EyePACS patient>_<left|right>
    lesion_segs_896x896/<id>/<lesion>.png   microaneurysm, retinal_hemorrhage, hard_exudate, cotton_wool_spots,
                                            vitreous_hemorrhage, preretinal_hemorrhage, neovascularization,
                                            fibrous_proliferation
    od_fovea_autoloc.txt               optional, anywhere in the folder (published beside the release): per image
                                       its optic disc and fovea boxes, found automatically by the dataset's authors

Fields: dr_grade = "our label" (the dataset's own re-grading, ICDR 0-4; the EyePACS grade is kept in
``extra``), dr = grade >= 1, referable_dr by the shared rule without a macular-edema grade (1 from grade 2,
undefined below), laterality and patient from the id. Only the lesions an image has get a mask file (some
images have no mask folder at all), so a missing file means the lesion is absent. Grey level 255 marks a
lesion and 127 one the annotators marked outside the grading guideline; both count as lesion. Findings,
lesion_size and lesion_count per lesion from ``focus_eval.data.lesion_geometry``, under the project's names
(retinal_hemorrhage -> hemorrhage, cotton_wool_spots -> cotton_wool_spot, neovascularization -> new_vessels).
Lesion positions (lesion_quadrants) from the release's automatic disc and fovea localisation, where the file is
present: the disc and fovea centres are the centres of their boxes (kept in ``extra``, with ``localisation:
automatic``); an image the file does not list, or whose centres fall outside the image, has no positions. Split:
the project's patient-grouped seeded split.
"""

from __future__ import annotations

from pathlib import Path

import math

from focus_eval.data.cells import clean_id, dr_present, parse_grade, referable_dr
from focus_eval.data.files import (admitted, find_dir_near, find_files, find_label_file, is_image_name, relative_to,
                                   require_regular, with_extension)
from focus_eval.data.lesion_geometry import Point, image_lesion_fields, image_shape, in_frame
from focus_eval.data.matching import ImageMatcher, Listed, read_rows
from focus_eval.data.records import DatasetLoad
from focus_eval.data.spec import ALL_IMAGES, ReaderSpec
from focus_eval.data.tables import read_csv_rows, resolve_columns
from focus_eval.errors import DataError

SPEC = ReaderSpec(
    name="retinal_lesions",
    targets=("dr",),
    group_key="patient (the EyePACS patient number before _left/_right in the image id)",
    documented_counts={ALL_IMAGES: {"n": 1593, "dr_neg": 166, "dr_pos": 337 + 929 + 99 + 62}},
)

LABEL_FILE = "dr_grades.csv"
IMAGE_DIR, MASK_DIR = "images_896x896", "lesion_segs_896x896"
COLUMNS = {"image": ("image id", "image_id", "image"), "grade": ("our label",), "kaggle": ("kaggle label",)}
# mask file stem -> the project's finding name
LESIONS = {"microaneurysm": "microaneurysm", "retinal_hemorrhage": "hemorrhage", "hard_exudate": "hard_exudate",
           "cotton_wool_spots": "cotton_wool_spot", "vitreous_hemorrhage": "vitreous_hemorrhage",
           "preretinal_hemorrhage": "preretinal_hemorrhage", "neovascularization": "new_vessels",
           "fibrous_proliferation": "fibrous_proliferation"}
EYES = {"left": "left", "right": "right"}
LOCALISATION_FILE = "od_fovea_autoloc.txt"
LOCALISATION_COLUMNS = ("img", "odx_0", "ody_0", "odx_1", "ody_1", "fx_0", "fy_0", "fx_1", "fy_1")


def read(folder: Path) -> DatasetLoad:
    folder = Path(folder)
    load = SPEC.new_load(folder)
    label_file = find_label_file(folder, (LABEL_FILE,), f"Retinal-Lesions label file "
                                 f"(retinal-lesions-v20191227/{LABEL_FILE})", load.warnings)
    image_dir = find_dir_near(label_file, folder, (IMAGE_DIR,))
    if image_dir is None:
        raise DataError(f"no {IMAGE_DIR}/ folder found beside the label file", file=str(label_file))
    mask_dir = find_dir_near(label_file, folder, (MASK_DIR,))
    masks = _mask_files(mask_dir, load) if mask_dir is not None else {}
    if mask_dir is None:
        load.warnings.append(f"no {MASK_DIR}/ folder beside {label_file}: no lesion is annotated")
    headers, rows = read_csv_rows(label_file)
    columns = resolve_columns(headers, COLUMNS, label_file, optional=("kaggle",))

    def listed(row: dict) -> Listed:
        line = row["__row__"]
        name = with_extension(clean_id(row[columns["image"]], label_file, line, columns["image"]), ".jpg")
        stem = Path(name).stem
        grade = parse_grade(row[columns["grade"]], range(5), label_file, line, columns["grade"])
        kaggle = parse_grade(row[columns["kaggle"]], range(5), label_file, line, columns["kaggle"]) \
            if "kaggle" in columns else None
        patient, _, eye = stem.rpartition("_")
        return Listed(name, stem, line, dict(
            patient_id=patient if eye.lower() in EYES else stem, laterality=EYES.get(eye.lower()),
            modality="cfp", dr_grade=grade, dr=dr_present(grade), referable_dr=referable_dr(grade, None),
            extra={"kaggle_grade": kaggle}))

    read_rows(load, ImageMatcher(folder, label_file, image_dir), rows, listed)
    located, localisation_file = _localisation(folder, load)
    for record in load.records if mask_dir is not None else ():
        found = masks.get(record.image_id.lower(), {})  # no mask folder: the image has none of the lesions
        paths = {lesion: found.get(lesion) for lesion in LESIONS.values()}
        disc, fovea = _centres(record, located)
        for name, value in image_lesion_fields(record.path, paths, disc=disc, fovea=fovea).items():
            setattr(record, name, value)
    stray = sorted(set(masks) - {r.image_id.lower() for r in load.records} - {s.image_id.lower() for s in load.skipped
                                                                               if s.image_id})
    if stray:
        load.warnings.append(f"{len(stray)} mask folder(s) in {mask_dir} have no row in {LABEL_FILE} "
                             f"(e.g. {stray[0]}); not read")
    _unlisted(load, located, localisation_file)
    files = {"labels": relative_to(folder, label_file),
             **({"localisation": relative_to(folder, localisation_file)} if localisation_file else {})}
    return SPEC.finish_load(load, files if localisation_file else files["labels"])


Located = dict[str, tuple[Point, Point, int]]


def _localisation(folder: Path, load: DatasetLoad) -> tuple[Located, Path | None]:
    """Lower-cased image id -> (disc centre, fovea centre, row) from the release's automatic localisation file, or
    nothing (with a warning) when the folder has none."""
    found = find_files(folder, (LOCALISATION_FILE,))
    if not found:
        load.warnings.append(f"no {LOCALISATION_FILE} under {folder}: no lesion positions (the L3b tasks have no "
                             f"images); it is published beside the release")
        return {}, None
    path = require_regular(found[0], "Retinal-Lesions localisation file")
    if len(found) > 1:
        load.warnings.append(f"{len(found)} copies of {LOCALISATION_FILE} found; reading {found[0]}")
    out: Located = {}
    for row, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), start=1):
        cells = line.split()
        if not cells or cells[0].startswith("#"):
            continue
        if len(cells) != len(LOCALISATION_COLUMNS):
            raise DataError(f"expected {len(LOCALISATION_COLUMNS)} fields ({' '.join(LOCALISATION_COLUMNS)}), got "
                            f"{len(cells)}", file=str(path), row=row)
        box = [_coordinate(c, name, path, row) for c, name in zip(cells[1:], LOCALISATION_COLUMNS[1:])]
        key = Path(cells[0]).stem.lower()
        if key in out:
            raise DataError(f"image {cells[0]} is listed twice (first on row {out[key][2]})", file=str(path), row=row)
        out[key] = (_box_centre(box[:4], path, row), _box_centre(box[4:], path, row), row)
    return out, path


def _coordinate(cell: str, column: str, path: Path, row: int) -> float:
    try:
        value = float(cell)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise DataError(f"{column} must be a number, got {cell!r}", file=str(path), row=row)
    return value


def _box_centre(box: list[float], path: Path, row: int) -> Point:
    x0, y0, x1, y1 = box
    if x1 < x0 or y1 < y0:
        raise DataError(f"a box's second corner ({x1:g}, {y1:g}) lies before its first ({x0:g}, {y0:g})",
                        file=str(path), row=row)
    return ((x0 + x1) / 2, (y0 + y1) / 2)


def _centres(record, located: Located) -> tuple[Point | None, Point | None]:
    """The record's disc and fovea centres, kept in its ``extra``; none when the file does not list the image or a
    centre falls outside the image (counted as implausible)."""
    entry = located.get(record.image_id.lower())
    if entry is None:
        return None, None
    disc, fovea, _ = entry
    size = image_shape(record.path)[::-1]
    if not (in_frame(disc, size) and in_frame(fovea, size)):
        record.extra["implausible_centres"] = True
        return None, None
    record.extra.update({"disc_centre": disc, "fovea_centre": fovea, "localisation": "automatic"})
    return disc, fovea


def _unlisted(load: DatasetLoad, located: Located, path: Path | None) -> None:
    if path is None:
        return
    ids = {r.image_id.lower() for r in load.records}
    missing = sorted(ids - set(located))
    stray = sorted(set(located) - ids)
    implausible = sorted(r.image_id for r in load.records if r.extra.get("implausible_centres"))
    if missing:
        load.warnings.append(f"{len(missing)} image(s) not in {path.name}: no lesion positions (e.g. {missing[0]})")
    if stray:
        load.warnings.append(f"{len(stray)} row(s) of {path.name} name no image of the labels (e.g. {stray[0]})")
    if implausible:
        load.warnings.append(f"{len(implausible)} image(s) with a disc or fovea centre outside the image in "
                             f"{path.name}: no lesion positions (e.g. {implausible[0]})")


def _mask_files(mask_dir: Path, load: DatasetLoad) -> dict[str, dict[str, Path]]:
    """Lower-cased image id -> finding name -> mask file; unknown mask names are reported and left out."""
    out: dict[str, dict[str, Path]] = {}
    unknown = []
    for image_folder in sorted(p for p in mask_dir.iterdir() if p.is_dir()):
        files = out.setdefault(image_folder.name.lower(), {})
        for path in sorted(admitted(image_folder.iterdir())):
            lesion = LESIONS.get(path.stem.lower())
            if lesion is None or not is_image_name(path.name):
                unknown.append(path)
            else:
                files[lesion] = path
    if unknown:
        load.warnings.append(f"{len(unknown)} file(s) in {mask_dir} are no known lesion mask "
                             f"(e.g. {unknown[0]}); not read")
    return out
