"""Miniature mBRSET in its raw layout: 9 patients x 4 views = 36 label rows (35 images) with the real columns
and codes and the known pitfalls (a missing image as for 985.1.jpg, ungraded rows, edema without a grade, a
grade without edema, an age written '>= 90', an implausible age, a view whose laterality breaks the suffix
rule). Variants: ``physionet`` (labels_mbrset.csv, ``file`` with .jpg), ``github`` (the authors'
dataframe_brsetmobile.csv, flat, numeric ages) and ``hulmanlab`` (``file`` without extension, trailing spaces).

Labels and file names are fixed (tests state them by hand); ``seed`` only varies the pictures. Both targets
have both classes in every split of the default cohort (views .1 and .3).
"""

from __future__ import annotations

import csv
from pathlib import Path

from focus_eval.synth.raw_common import ImageFn, image_labels, save_jpeg

VARIANTS = ("physionet", "github", "hulmanlab")
HEADER = ["patient", "age", "sex", "dm_time", "insulin", "insulin_time", "oraltreatment_dm", "systemic_hypertension",
          "insurance", "educational_level", "alcohol_consumption", "smoking", "obesity", "vascular_disease",
          "acute_myocardial_infarction", "nephropathy", "neuropathy", "diabetic_foot", "file", "laterality",
          "final_artifacts", "final_quality", "final_icdr", "final_edema"]
# patient -> (age, sex code 1 male / 0 female)
PATIENTS = {1: ("63", 0), 2: ("57", 1), 3: ("94", 0), 4: ("8", 1), 5: ("66", 0), 6: ("70", 1), 7: ("59", 0),
            8: ("61", 0), 9: ("52", 1)}
AGE_CAPPED = {3}  # the PhysioNet file writes '>= 90' for this patient
# (patient, view) -> (final_icdr or None, final_edema or None, final_quality); views not listed: grade 0, "no", "yes"
VIEWS = {
    (2, 2): (None, None, "no"),
    (3, 4): (None, "yes", "no"),
    (5, 1): (2, "no", "yes"), (5, 2): (2, "no", "yes"), (5, 3): (1, "no", "yes"), (5, 4): (1, "no", "yes"),
    (6, 1): (1, None, "yes"), (6, 2): (3, "yes", "yes"), (6, 3): (3, "yes", "yes"), (6, 4): (3, "yes", "yes"),
    (7, 1): (4, "yes", "yes"), (7, 2): (4, "yes", "yes"), (7, 3): (4, "yes", "yes"), (7, 4): (4, "yes", "no"),
    (8, 1): (0, "yes", "yes"), (8, 3): (2, "no", "yes"),
    (9, 1): (1, "no", "yes"), (9, 2): (1, "no", "yes"), (9, 3): (1, "no", "yes"), (9, 4): (1, "no", "yes"),
}
MISSING_IMAGES = {(9, 1)}
LATERALITY_EXCEPTIONS = {(4, 2): "left"}  # as for 104.2.jpg in the real file


def view_labels(patient: int, view: int) -> tuple[int | None, str | None, str]:
    return VIEWS.get((patient, view), (0, "no", "yes"))


def write(folder: Path, seed: int, image: ImageFn, variant: str = "physionet") -> None:
    """Write the miniature mBRSET raw layout (``variant`` in VARIANTS) under ``folder``."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown mBRSET variant {variant!r}; expected one of {VARIANTS}")
    folder = Path(folder)
    root = folder / "physionet.org" / "files" / "mbrset" / "1.0" if variant == "physionet" else folder
    name = "dataframe_brsetmobile.csv" if variant == "github" else "labels_mbrset.csv"
    root.mkdir(parents=True, exist_ok=True)
    with (root / name).open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        for patient in PATIENTS:
            for view in range(1, 5):
                writer.writerow(_cells(patient, view, variant))
    for patient in PATIENTS:
        for view in range(1, 5):
            if (patient, view) not in MISSING_IMAGES:
                save_jpeg(image, _labels(patient, view, seed), root / "images" / f"{patient}.{view}.jpg")


def _cells(patient: int, view: int, variant: str) -> list[str]:
    age, sex = PATIENTS[patient]
    icdr, edema, quality = view_labels(patient, view)
    pad = " " if variant == "hulmanlab" else ""
    values = {
        "patient": patient, "age": ">= 90" if variant != "github" and patient in AGE_CAPPED else age, "sex": sex,
        "dm_time": 10, "insulin": 1 if patient % 2 else 0, "educational_level": 4,
        "file": f"{patient}.{view}" if variant == "hulmanlab" else f"{patient}.{view}.jpg",
        "laterality": LATERALITY_EXCEPTIONS.get((patient, view), "right" if view <= 2 else "left") + pad,
        "final_artifacts": "no" + pad, "final_quality": quality + pad,
        "final_icdr": "" if icdr is None else f"{icdr:.1f}", "final_edema": "" if edema is None else edema + pad,
    }
    return [str(values.get(h, "0.0")) for h in HEADER]


def _labels(patient: int, view: int, seed: int) -> dict:
    age, sex = PATIENTS[patient]
    icdr, edema, quality = view_labels(patient, view)
    return image_labels(
        "mbrset", f"{patient}.{view}", str(patient), seed, dr_grade=icdr,
        dr=None if icdr is None else int(icdr >= 1),
        referable_dr=_referable(icdr, edema),
        age=float(age), sex={1: "male", 0: "female"}[sex],
        quality={"yes": "adequate", "no": "inadequate"}[quality], eye="right" if view <= 2 else "left")


def _referable(icdr: int | None, edema: str | None) -> int | None:
    if icdr is None:
        return None
    if icdr >= 2 or edema == "yes":
        return 1
    return None if edema is None else 0
