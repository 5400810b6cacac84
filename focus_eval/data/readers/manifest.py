"""Reader for ``manifest`` datasets: a user's CSV or JSONL with one row per image (``image``: a path relative to
the manifest) and label columns, read as its dataset card (``focus_eval.data.cards``) says.

Every row gives one record; a label code the card does not list, a bad age or an unknown split stops the load
with an error naming file, line and column; a missing or empty image file skips its row, with the reason. Columns
the card does not use are kept in the record's ``extra`` (the cohort filter reads them there).
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path

from focus_eval.data.cards import DatasetCard
from focus_eval.data.cells import (ABNORMAL_CODES, FINDING_CODES, clean_id, map_code, parse_age, parse_conditions,
                                   parse_grade)
from focus_eval.data.files import file_problem, normalised_name, require_regular, safe_path
from focus_eval.data.matching import ImageMatcher, Listed, read_rows, usable_file
from focus_eval.data.records import DatasetLoad, ImageRecord, Skipped
from focus_eval.data.spec import ReaderSpec, every_image
from focus_eval.data.tables import Row, clean_cell, clean_header, read_csv_rows, resolve_columns
from focus_eval.errors import DataError
from focus_eval.files import DuplicateKeyError, load_json

CARD_COHORT = "card"  # the cohort a card's filter defines (the default when it has one)


def manifest_reader(card: DatasetCard):
    """The registry entry of one card: its spec and a ``read(folder)`` bound to the card."""
    from focus_eval.data.registry import Reader

    return Reader(spec=manifest_spec(card), read=partial(read_manifest, card))


def manifest_spec(card: DatasetCard) -> ReaderSpec:
    """Targets from the card, the card's cohort filter, and an official split when the manifest has a split
    column (else the patient-grouped 60/20/20 split)."""
    cohorts = {"all": every_image}
    if card.cohort:
        column, kept = card.cohort
        cohorts[CARD_COHORT] = partial(_in_cohort, column, {k.lower() for k in kept})
    headers = {h.lower() for h in card_headers(card)}
    patient = card.columns["patient_id"]
    group_key = (f"patient (manifest column {patient!r})" if patient.lower() in headers
                 else "image (the manifest has no patient_id column: each image is its own group)")
    return ReaderSpec(name=card.name, targets=tuple(card.targets), group_key=group_key, cohorts=cohorts,
                      default_cohort=CARD_COHORT if card.cohort else "all",
                      official_split=card.columns["split"].lower() in headers)


def _in_cohort(column: str, kept: set[str], record: ImageRecord) -> bool:
    value = record.extra.get(column)
    return value is not None and str(value).lower() in kept


def card_rows(card: DatasetCard) -> tuple[list[str], list[Row]]:
    """(headers, rows) of the card's manifest, or of the dataset it names in another format (its ``format``)."""
    if card.format == "manifest":
        return read_manifest_rows(card.manifest)
    from focus_eval.data.hf_sources import source_rows

    return source_rows(card)


def card_headers(card: DatasetCard) -> list[str]:
    """The column names of the card's manifest or dataset (a dataset's from its features: no image is written)."""
    if card.format == "manifest":
        return manifest_headers(card.manifest)
    from focus_eval.data.hf_sources import source_headers

    return source_headers(card)


def card_columns(card: DatasetCard, headers: list[str]) -> dict[str, str]:
    """Concept -> header for the card's fields (only image is required), each target's label column and the
    FunBench fields it maps; a column the card names and the manifest lacks is a DataError naming the file."""
    wanted = ({f: (card.columns[f],) for f in card.columns} | {c.column: (c.column,) for c in card.targets.values()}
              | {f"funbench:{f}": (column,) for f, column in card.funbench.items()})
    return resolve_columns(headers, wanted, card.manifest, optional=[f for f in card.columns if f != "image"])


def manifest_headers(path: Path) -> list[str]:
    """The column names of a manifest (a CSV header, or the keys of a JSONL file's rows)."""
    return read_manifest_rows(path)[0]


def read_manifest_rows(path: Path) -> tuple[list[str], list[Row]]:
    """(headers, rows) of a ``.csv`` or ``.jsonl`` manifest; rows carry ``__row__``, their line number."""
    if not path.exists() and not path.is_symlink():
        raise DataError("manifest file not found (the card's 'manifest' names it, relative to the card)",
                        file=str(path))
    require_regular(path, "manifest")
    if path.suffix.lower() == ".csv":
        return read_csv_rows(path)
    if path.suffix.lower() not in (".jsonl", ".ndjson"):
        raise DataError("a manifest is a .csv or .jsonl file", file=str(path))
    headers: dict[str, None] = {}
    rows: list[Row] = []
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise DataError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=str(path), row=line) from None
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = load_json(line)
        except DuplicateKeyError as exc:
            raise DataError(f"key {exc.key!r} is given twice", file=str(path), row=lineno) from None
        except ValueError as exc:
            raise DataError(f"not a JSON object: {exc}", file=str(path), row=lineno) from None
        if not isinstance(item, dict):
            raise DataError("each line must be a JSON object", file=str(path), row=lineno)
        row: Row = {"__row__": lineno}  # type: ignore[dict-item]
        for key, value in item.items():
            headers[clean_header(key)] = None
            row[clean_header(key)] = clean_cell(value)
        rows.append(row)
    return list(headers), rows


class ManifestImages(ImageMatcher):
    """Image paths as the manifest writes them, relative to its folder and never outside the dataset folder."""

    def __init__(self, root: Path, manifest: Path):
        super().__init__(root, manifest, manifest.parent, images={})

    def resolve(self, name: str, *, row: int | None, image_id: str | None = None,
                excluded: str | None = None) -> Path | Skipped:
        self.claim(name, row)
        image_id = name if image_id is None else image_id
        if excluded is not None:
            return Skipped(str(self.label_file), row, image_id, excluded)
        path = safe_path(self.root, self.image_dir / name, self.label_file, row)
        if not os.path.lexists(path):
            self.missing += 1
            return Skipped(str(self.label_file), row, image_id, f"image file not found: {path}")
        problem = file_problem(path)
        if problem is not None:
            return Skipped(str(self.label_file), row, image_id, f"image file {path} is {problem}")
        return usable_file(self.root, path, self.label_file, row, image_id)


def read_manifest(card: DatasetCard, folder: Path) -> DatasetLoad:
    """Every row of the card's manifest as a record (``folder`` is the card's dataset folder)."""
    manifest = card.manifest
    headers, rows = card_rows(card)
    columns = card_columns(card, headers)
    load = DatasetLoad(card.name, Path(folder), [], metadata={
        "label_file": str(manifest), "version": card.version, "card": str(card.path),
        "label_rules": {t: c.label_rule for t, c in card.targets.items()}})
    read_rows(load, ManifestImages(Path(folder), manifest), rows, lambda row: _listed(card, columns, row))
    if "patient_id" not in columns:
        load.warnings.append(f"{manifest.name} has no patient_id column: each image counts as its own patient, "
                             "so two images of one person may fall in different splits")
    if card.format != "manifest" and "split" not in columns:
        from focus_eval.data.hf_sources import NO_SPLITS

        load.warnings.append(f"{manifest.name}: {NO_SPLITS}")
    return load


def _listed(card: DatasetCard, columns: dict[str, str], row: Row) -> Listed:
    file, line = card.manifest, row["__row__"]

    def cell(key: str) -> str | None:
        return row.get(columns[key]) if key in columns else None

    def coded(key: str):
        return map_code(cell(key), card.codings[key], file, line, columns.get(key, key))

    image = normalised_name(clean_id(cell("image"), file, line, columns["image"]))  # one file, one id
    image_id = Path(image).with_suffix("").as_posix()
    fields = {t: map_code(row.get(columns[c.column]), c.codes, file, line, c.column) for t, c in card.targets.items()}
    extra = {k: v for k, v in row.items() if k not in ("__row__", columns["image"])}
    eye = coded("laterality")
    if eye is not None:
        extra["eye"] = eye
        fields["laterality"] = {"OD": "right", "OS": "left"}.get(eye)
    patient = cell("patient_id")
    fields.update(patient_id=image_id if patient is None else clean_id(patient, file, line, columns["patient_id"]),
                  split=coded("split"), age=parse_age(cell("age"), file, line, columns.get("age", "age")),
                  sex=coded("sex"), quality=coded("quality"), extra=extra)
    mapped = {f: columns[f"funbench:{f}"] for f in card.funbench}
    fields.update(_funbench_fields(card, {f: (row.get(column), column) for f, column in mapped.items()}, line))
    return Listed(image, image_id, line, fields)


def _excluded(card: DatasetCard, column: str, value) -> bool:
    """Whether a target read from the same column excludes this code (``ungradable``): no grade then."""
    code = str(value).strip().lower() if value is not None else None
    return any(c.column == column and code in {k.lower() for k, v in c.codes.items() if v is None}
               for c in card.targets.values())


def _funbench_fields(card: DatasetCard, cells: dict[str, tuple], line: int) -> dict:
    """The FunBench fields the card maps, each cell read by the shipped readers' rules: an ICDR grade 0-4, 1/0
    (yes/no) findings and abnormal, ';'-separated conditions from the card's list."""
    file, out, findings = card.manifest, {}, {}
    for name, (value, column) in cells.items():
        if name == "dr_grade":
            out["dr_grade"] = None if _excluded(card, column, value) else parse_grade(value, range(5), file, line,
                                                                                     column)
        elif name == "abnormal":
            out["abnormal"] = map_code(value, ABNORMAL_CODES, file, line, column)
        elif name == "conditions":
            out["conditions"] = parse_conditions(value, card.condition_names, file, line, column)
        else:
            findings[name.split(".", 1)[1]] = map_code(value, FINDING_CODES, file, line, column)
    return out | ({"findings": findings} if findings else {})
