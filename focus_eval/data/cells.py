"""Parsing label cells into harmonized values without ever guessing: identifiers, grades, coded values (sex,
quality, yes/no), ages and numbers, and the referable-DR rule shared by the DR datasets."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping, Sequence

from focus_eval.errors import DataError


def clean_id(value: str | None, file: Path, row: int | None, column: str) -> str:
    """An identifier cell as text, with spreadsheet float noise removed ('126.0' -> '126'); an empty cell is
    a DataError naming file, row and column."""
    if value is None:
        raise DataError(f"column {column!r} is empty", file=str(file), row=row)
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        return text
    return str(int(number)) if number.is_integer() and "e" not in text.lower() else text


def parse_number(value: str | None, file: Path, row: int | None, column: str) -> float | None:
    """A numeric cell as float (a decimal comma is accepted); None for empty; other text is a DataError."""
    if value is None:
        return None
    try:
        return float(str(value).replace(",", "."))
    except ValueError:
        raise DataError(f"column {column!r}: {value!r} is not a number", file=str(file), row=row) from None


def parse_grade(value: str | None, allowed: Sequence[int], file: Path, row: int | None, column: str) -> int | None:
    """An integer grade such as ICDR 0-4 (accepting '2', '2.0'); None when empty. Any other value is a
    DataError: labels are never recoded silently."""
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        number = None
    if number is None or not number.is_integer() or int(number) not in allowed:
        raise DataError(f"column {column!r}: {value!r} is not a grade in {list(allowed)}", file=str(file), row=row)
    return int(number)


def map_code(value: str | None, mapping: Mapping[str, object], file: Path, row: int | None, column: str):
    """Map a coded cell through ``mapping``; '1', '1.0' and 1 are the same code, and text codes match in any
    case. None when empty; an unknown code is a DataError naming file, row, column and the accepted codes."""
    if value is None:
        return None
    key = str(value).strip()
    try:
        number = float(key)
        if number.is_integer():
            key = str(int(number))
    except ValueError:
        pass
    lowered = {str(k).lower(): v for k, v in mapping.items()}
    if key.lower() not in lowered:
        raise DataError(f"column {column!r}: unknown code {value!r}; expected one of {sorted(mapping)}",
                        file=str(file), row=row)
    return lowered[key.lower()]


# Plausible ages in years: above 0 and at most 120. 0 is read as a missing-value code (label files of adult
# screening cohorts write 0 for "not recorded"; a newborn's age would be 0.0x years, which stays plausible).
AGE_MIN, AGE_MAX = 0.0, 120.0


def plausible_age(age: float | None) -> bool:
    """A missing age, or a finite one above ``AGE_MIN`` and at most ``AGE_MAX``."""
    return age is None or (math.isfinite(age) and AGE_MIN < age <= AGE_MAX)


def parse_age(value: str | None, file: Path, row: int | None, column: str) -> float | None:
    """Age in years: '>= 90' style caps map to 90; empty -> None; non-numeric text is a DataError. The number
    is returned as written; the row loop (``matching.read_rows``) turns an implausible one (``plausible_age``)
    into a missing age, counts it and names the rows in a warning."""
    if value is None:
        return None
    text = str(value).strip().replace(" ", "")
    if text.startswith(">"):  # ">= 90" and "> 90": the release caps ages at 90
        return 90.0
    try:
        return float(text.replace(",", "."))
    except ValueError:
        raise DataError(f"column {column!r}: age {value!r} is not a number", file=str(file), row=row) from None


# yes/no cells of a finding or of normal/abnormal, as the shipped readers write them (1/0 in every release)
FLAG_CODES = {"1": 1, "0": 0, "yes": 1, "no": 0, "true": 1, "false": 0}
FINDING_CODES = FLAG_CODES | {"present": 1, "absent": 0}
ABNORMAL_CODES = FLAG_CODES | {"abnormal": 1, "normal": 0}


def parse_conditions(value: str | None, names: Sequence[str], file: Path, row: int | None,
                     column: str) -> tuple[str, ...] | None:
    """A cell naming the conditions present, separated by ';' (``normal`` alone for a normal image), as the
    ``conditions`` field: the names in ``names`` order, ``("normal",)``, or None when empty. A name outside
    ``names`` or ``normal`` beside another name is a DataError naming file, row and column."""
    if value is None:
        return None
    given = [part.strip().lower().replace(" ", "_") for part in str(value).split(";") if part.strip()]
    unknown = sorted({g for g in given if g != "normal" and g not in names})
    if unknown or not given:
        raise DataError(f"column {column!r}: unknown condition(s) {unknown or [value]}; expected 'normal' or "
                        f"names from {list(names)} separated by ';'", file=str(file), row=row)
    if "normal" in given:
        if len(set(given)) > 1:
            raise DataError(f"column {column!r}: 'normal' cannot stand beside a condition ({value!r})",
                            file=str(file), row=row)
        return ("normal",)
    return tuple(n for n in names if n in given)


def dr_present(grade: int | None) -> int | None:
    """DR from an ICDR grade: 1 for grade >= 1, 0 for grade 0, None without a grade."""
    return None if grade is None else int(grade >= 1)


def referable_dr(grade: int | None, edema: int | None, *, needs_grade: bool = False) -> int | None:
    """Referable DR from an ICDR grade and a macular-edema value (0 = none): grade >= 2 or any edema. None
    when a missing value could change the answer. With ``needs_grade`` (the BRSET and mBRSET rule) an
    image without a grade is undefined even when it shows edema."""
    if needs_grade and grade is None:
        return None
    if (grade is not None and grade >= 2) or (edema is not None and edema >= 1):
        return 1
    if grade is None or edema is None:
        return None
    return 0


def normal_and_conditions(flags: Mapping[str, int | None], conditions: Sequence[str]
                          ) -> tuple[int | None, tuple[str, ...] | None]:
    """(abnormal, conditions) from every finding flag a dataset annotates (1, 0 or None when empty): abnormal
    when any flag is 1, normal (conditions ``("normal",)``) when every flag is 0, else undefined. The conditions
    of an abnormal image are the names in ``conditions`` whose flag is 1; None when one of them is empty."""
    values = list(flags.values())
    abnormal = 1 if 1 in values else (None if None in values else 0)
    if abnormal == 0:
        return 0, ("normal",)
    if abnormal is None or any(flags.get(name, 0) is None for name in conditions):
        return abnormal, None
    return 1, tuple(name for name in conditions if flags.get(name) == 1)
