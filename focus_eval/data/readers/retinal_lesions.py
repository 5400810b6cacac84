"""Reader for Retinal-Lesions (Wei et al. 2020): 1,593 EyePACS images at 896 x 896 with a DR grade and lesion
masks for eight lesions; no official split.

Raw layout, inside ``retinal-lesions-v20191227/`` (found at any depth by ``dr_grades.csv``)::

    dr_grades.csv                      image id, kaggle label, our label
    images_896x896/<id>.jpg            <id> = <EyePACS patient>_<left|right>
    lesion_segs_896x896/<id>/<lesion>.png   microaneurysm, retinal_hemorrhage, hard_exudate, cotton_wool_spots,
                                            vitreous_hemorrhage, preretinal_hemorrhage, neovascularization,
                                            fibrous_proliferation

Fields: dr_grade = "our label" (the dataset's own re-grading, ICDR 0-4; the EyePACS grade is kept in
``extra``), dr = grade >= 1, referable_dr by the shared rule without a macular-edema grade (1 from grade 2,
undefined below), laterality and patient from the id. Only the lesions an image has get a mask file (some
images have no mask folder at all), so a missing file means the lesion is absent. Grey level 255 marks a
lesion and 127 one the annotators marked outside the grading guideline; both count as lesion. Findings,
lesion_size and lesion_count per lesion from ``focus_eval.data.lesion_geometry``, under the project's names
(retinal_hemorrhage -> hemorrhage, cotton_wool_spots -> cotton_wool_spot, neovascularization -> new_vessels).
No optic disc annotation, so no lesion positions. Split: the project's patient-grouped seeded split.
"""

from __future__ import annotations

from pathlib import Path

from focus_eval.data.cells import clean_id, dr_present, parse_grade, referable_dr
from focus_eval.data.files import admitted, find_dir_near, find_label_file, is_image_name, relative_to, with_extension
from focus_eval.data.lesion_geometry import image_lesion_fields
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
    for record in load.records if mask_dir is not None else ():
        found = masks.get(record.image_id.lower(), {})  # no mask folder: the image has none of the lesions
        paths = {lesion: found.get(lesion) for lesion in LESIONS.values()}
        for name, value in image_lesion_fields(record.path, paths).items():
            setattr(record, name, value)
    stray = sorted(set(masks) - {r.image_id.lower() for r in load.records} - {s.image_id.lower() for s in load.skipped
                                                                               if s.image_id})
    if stray:
        load.warnings.append(f"{len(stray)} mask folder(s) in {mask_dir} have no row in {LABEL_FILE} "
                             f"(e.g. {stray[0]}); not read")
    return SPEC.finish_load(load, relative_to(folder, label_file))


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
