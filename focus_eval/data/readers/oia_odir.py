"""Reader for OIA-ODIR (Li et al. 2021, the ODIR-2019 challenge set): colour fundus photographs of both eyes
of 5,000 patients in three published parts, each ``<part>/Annotation/<name> (English).xlsx`` beside
``<part>/Images/``:

    Training Set/Annotation/training annotation (English).xlsx        -> train
    Off-site Test Set/Annotation/off-site test annotation (English).xlsx -> val
    On-site Test Set/Annotation/on-site test annotation (English).xlsx   -> test

One sheet row per patient: ``ID``, ``Patient Age``, ``Patient Sex``, ``Left-Fundus`` and ``Right-Fundus`` (the
image names, ``<ID>_left.jpg``), ``Left-Diagnostic Keywords`` and ``Right-Diagnostic Keywords`` (per eye,
separated by full-width or plain commas), and the patient-level flags N, D, G, C, A, H, M, O.

Each row gives two records, one per eye; laterality comes from the image file name (``_left``/``_right``).
Labels are per eye, from that eye's keywords (``KEYWORD_RULES``): each keyword maps to one condition, image
quality remarks map to none (and some mark the image inadequate). The patient-level flags describe the
patient (both eyes together, and D and H name the systemic disease), so they never label an eye: they are
kept in ``extra`` and checked against the eye labels (a warning counts the patients where an eye shows a
condition whose patient flag is 0). Patient ids are the release's IDs, one space over the three parts, so
the split check proves that no patient crosses parts.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from focus_eval.data.cells import clean_id, map_code, parse_age
from focus_eval.data.files import find_dir_near, find_label_file
from focus_eval.data.matching import ImageMatcher, Listed, read_rows
from focus_eval.data.records import NORMAL, DatasetLoad
from focus_eval.data.spec import ReaderSpec
from focus_eval.data.tables import read_xlsx_rows, resolve_columns
from focus_eval.errors import DataError

SPEC = ReaderSpec(
    name="oia_odir",
    targets=("dr", "glaucoma"),
    group_key="patient (the ID column; both eyes of a patient share a split)",
    official_split=True,
    # the published parts: 3,500 / 500 / 1,000 patients, two images each
    documented_counts={},
    label_rules={
        "conditions": "per eye, each diagnostic keyword by KEYWORD_RULES (normal fundus -> normal; quality remarks "
                      "-> none; unmatched -> other); normal is dropped beside any other condition; no keyword "
                      "but quality remarks -> unknown",
        "abnormal": "conditions normal -> 0, any other condition -> 1",
        "dr": "diabetic_retinopathy among the eye's conditions -> 1, else 0",
        "glaucoma": "a glaucoma keyword -> 1 ('suspected glaucoma' alone -> unknown), else 0",
        "laterality": "the image file name (<ID>_left / <ID>_right)",
        "quality": "a remark of INADEQUATE_REMARKS -> inadequate, else unknown",
    },
)

PARTS = (("train", "training annotation (English).xlsx"), ("val", "off-site test annotation (English).xlsx"),
         ("test", "on-site test annotation (English).xlsx"))
COLUMNS = {"id": ("ID",), "age": ("Patient Age",), "sex": ("Patient Sex",),
           "left": ("Left-Fundus",), "right": ("Right-Fundus",),
           "left_keywords": ("Left-Diagnostic Keywords",), "right_keywords": ("Right-Diagnostic Keywords",)}
PATIENT_FLAGS = ("N", "D", "G", "C", "A", "H", "M", "O")
SEXES = {"female": "female", "male": "male"}
CONDITIONS = ("diabetic_retinopathy", "glaucoma", "cataract", "amd", "hypertensive_retinopathy", "myopia", "other")
# keyword (lower case, spaces collapsed) -> condition: the first rule whose pattern occurs in it wins; a
# keyword no rule matches is "other"; quality remarks are no condition.
KEYWORD_RULES = (
    ("normal fundus", NORMAL),
    ("glaucoma", "glaucoma"),
    ("cataract", "cataract"),
    ("macular degeneration", "amd"),
    ("hypertensive", "hypertensive_retinopathy"),
    ("myopi", "myopia"),
    ("diabetic retinopathy", "diabetic_retinopathy"),
    ("proliferative retinopathy", "diabetic_retinopathy"),  # mild/moderate/severe (non )proliferative retinopathy
)
QUALITY_REMARKS = ("lens dust", "low image quality", "image offset", "no fundus image",
                   "optic disk photographically invisible", "anterior segment image")
INADEQUATE_REMARKS = QUALITY_REMARKS[1:]  # dust on the lens leaves the fundus readable
# eye condition -> the patient flag that should then be 1
FLAG_OF = {"diabetic_retinopathy": "D", "glaucoma": "G", "cataract": "C", "amd": "A",
           "hypertensive_retinopathy": "H", "myopia": "M", "other": "O"}
SEPARATORS = re.compile(r"[，,]")


@dataclass(frozen=True)
class EyeLabels:
    """What one eye's keywords say."""

    conditions: tuple[str, ...] | None
    glaucoma: int | None
    inadequate: bool
    keywords: tuple[str, ...]


def keyword_condition(keyword: str) -> str | None:
    """The condition one keyword names (None for an image quality remark)."""
    text = " ".join(keyword.lower().split())
    if text in QUALITY_REMARKS:
        return None
    return next((condition for pattern, condition in KEYWORD_RULES if pattern in text), "other")


def unmatched(keyword: str) -> bool:
    """Whether ``keyword`` matches no rule and no quality remark (it then counts as "other")."""
    text = " ".join(keyword.lower().split())
    return text not in QUALITY_REMARKS and not any(pattern in text for pattern, _ in KEYWORD_RULES)


def unmatched_warning(counts: Counter, shown: int = 10) -> list[str]:
    """One warning listing the keywords no rule matched, most frequent first, with their counts."""
    if not counts:
        return []
    top = ", ".join(f"{k!r} ({n})" for k, n in counts.most_common(shown))
    more = f", and {len(counts) - shown} more" if len(counts) > shown else ""
    return [f"{len(counts)} diagnostic keyword(s) match no rule and count as 'other' "
            f"({sum(counts.values())} eye(s)): {top}{more}"]


def eye_labels(cell: str | None) -> EyeLabels:
    """The labels of one eye from its diagnostic keywords cell."""
    keywords = tuple(k.strip() for k in SEPARATORS.split(cell or "") if k.strip())
    found = {keyword_condition(k) for k in keywords} - {None}
    if found - {NORMAL}:
        found.discard(NORMAL)
    conditions = (NORMAL,) if found == {NORMAL} else tuple(c for c in CONDITIONS if c in found) or None
    glaucoma_words = [k.lower() for k in keywords if keyword_condition(k) == "glaucoma"]
    if conditions is None:
        glaucoma = None
    elif any("suspect" not in k for k in glaucoma_words):
        glaucoma = 1
    else:
        glaucoma = None if glaucoma_words else 0
    inadequate = any(" ".join(k.lower().split()) in INADEQUATE_REMARKS for k in keywords)
    return EyeLabels(conditions, glaucoma, inadequate, keywords)


def read(folder: Path) -> DatasetLoad:
    folder = Path(folder)
    load = SPEC.new_load(folder)
    label_files, disagreeing, others = {}, set(), Counter()
    for split, name in PARTS:
        label_file = find_label_file(folder, [name], f"OIA-ODIR {split} annotation", load.warnings)
        image_dir = find_dir_near(label_file, folder, ["Images"])
        if image_dir is None:
            raise DataError("no Images folder next to the annotation folder", file=str(label_file))
        label_files[split] = label_file.relative_to(folder).as_posix()
        _read_part(load, folder, split, label_file, image_dir, disagreeing, others)
    if disagreeing:
        load.warnings.append(f"{len(disagreeing)} patient(s) have an eye condition whose patient-level flag is 0 "
                             f"(eye labels come from the keywords), e.g. {sorted(disagreeing)[0]}")
    load.warnings.extend(unmatched_warning(others))
    return SPEC.finish_load(load, label_files, unmatched_keywords=dict(others.most_common()))


def _read_part(load: DatasetLoad, folder: Path, split: str, label_file: Path, image_dir: Path,
               disagreeing: set[str], others: Counter) -> None:
    headers, rows = read_xlsx_rows(label_file)
    found = resolve_columns(headers, COLUMNS, label_file)
    flags = {f: h for f in PATIENT_FLAGS for h in headers if h.strip().upper() == f}
    items = [(row, eye) for row in rows for eye in ("left", "right")]

    def listed(item: tuple[dict, str]) -> Listed:
        row, eye = item
        line = row["__row__"]
        patient = clean_id(row[found["id"]], label_file, line, found["id"])
        name = clean_id(row[found[eye]], label_file, line, found[eye])
        stem = Path(name).stem
        if not stem.lower().endswith(f"_{eye}"):
            raise DataError(f"column {found[eye]!r}: {name!r} is not a {eye}-eye file name (<ID>_{eye}.jpg)",
                            file=str(label_file), row=line)
        labels = eye_labels(row[found[f"{eye}_keywords"]])
        others.update(" ".join(k.lower().split()) for k in labels.keywords if unmatched(k))
        patient_flags = {f: row[h] for f, h in flags.items()}
        if any(patient_flags.get(FLAG_OF[c]) in ("0", "0.0") for c in labels.conditions or () if c in FLAG_OF):
            disagreeing.add(patient)
        conditions = labels.conditions
        fields = {"patient_id": patient, "split": split, "laterality": eye, "conditions": conditions,
                  "abnormal": None if conditions is None else int(conditions != (NORMAL,)),
                  "dr": None if conditions is None else int("diabetic_retinopathy" in conditions),
                  "glaucoma": labels.glaucoma, "quality": "inadequate" if labels.inadequate else None,
                  "age": parse_age(row[found["age"]], label_file, line, found["age"]),
                  "sex": map_code(row[found["sex"]], SEXES, label_file, line, found["sex"]),
                  "extra": {"keywords": list(labels.keywords), "patient_flags": patient_flags}}
        return Listed(name, stem, line, fields)

    read_rows(load, ImageMatcher(folder, label_file, image_dir), items, listed)
