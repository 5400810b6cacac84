"""Shared helpers for dataset readers: finding label files, reading tables, matching columns and image files,
and mapping per-dataset codes (sex, age, quality) to harmonized values without ever guessing."""

from __future__ import annotations

import csv
import io
import math
import os
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from focus_eval.data.records import Skipped
from focus_eval.errors import DataError

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".tif", ".tiff", ".bmp"}


def clean_header(name: object) -> str:
    """Strip whitespace, a UTF-8 BOM and non-breaking spaces from a column name."""
    text = "" if name is None else str(name)
    return text.replace("\ufeff", "").replace("\xa0", " ").strip()


def clean_cell(value: object) -> str | None:
    """Strip a string cell; empty cells, NaN and 'NA'-style markers become None."""
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    text = str(value).replace("\xa0", " ").strip()
    if text == "" or text.lower() in {"nan", "na", "n/a", "none", "null"}:
        return None
    return text


def find_files(folder: Path, names: Sequence[str]) -> list[Path]:
    """All files under ``folder`` (any depth) whose name matches one of ``names`` case-insensitively,
    sorted by depth then path so that the shallowest candidate comes first."""
    return _find_named(folder, names, folders=False)


def find_one(folder: Path, names: Sequence[str], what: str) -> Path:
    """The first file named one of ``names`` under ``folder``; a DataError naming the expected path if none."""
    return _find_some(folder, names, what)[0]


def find_label_file(folder: Path, names: Sequence[str], what: str, warnings: list[str]) -> Path:
    """The label file ``find_one`` picks; when a copy of it lies elsewhere under ``folder`` too, a warning in
    ``warnings`` names the one read and the ones left unread (copies can differ, and only one is read)."""
    found = _find_some(folder, names, what)
    if len(found) > 1:
        unread = ", ".join(str(p) for p in found[1:])
        warnings.append(f"{len(found)} copies of {names[0]} found; reading {found[0]}, not {unread}")
    return found[0]


def _find_some(folder: Path, names: Sequence[str], what: str) -> list[Path]:
    if not folder.is_dir():
        raise DataError(f"dataset folder not found; expected {what} under it", file=str(folder))
    found = find_files(folder, names)
    if not found:
        alternatives = " or ".join(names)
        raise DataError(f"no {what} found; expected {alternatives} somewhere under {folder}", file=str(folder))
    return found


def find_dirs(folder: Path, names: Sequence[str]) -> list[Path]:
    """All folders under ``folder`` whose name matches one of ``names`` case-insensitively, shallowest first."""
    return _find_named(folder, names, folders=True)


def _find_named(folder: Path, names: Sequence[str], folders: bool) -> list[Path]:
    wanted = {n.lower() for n in names}
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        found += [Path(dirpath) / name for name in (dirnames if folders else filenames) if name.lower() in wanted]
    found.sort(key=lambda p: (len(p.relative_to(folder).parts), str(p)))
    return found


def read_csv_rows(path: Path, encoding: str = "utf-8-sig") -> tuple[list[str], list[dict[str, str | None]]]:
    """Read a CSV into (clean headers, rows of clean cells). Row dicts also carry ``__row__``: the 1-based
    line number in the file (header = line 1), for error messages."""
    try:
        raw = path.read_bytes().decode(encoding)
    except UnicodeDecodeError as exc:
        raise DataError(f"cannot decode as {encoding}: {exc}", file=str(path)) from exc
    reader = csv.reader(io.StringIO(raw))
    try:
        header = next(reader)
    except StopIteration:
        raise DataError("empty label file", file=str(path)) from None
    headers = [clean_header(h) for h in header]
    rows = []
    for lineno, values in enumerate(reader, start=2):
        if not any(v.strip() for v in values):
            continue
        row: dict[str, str | None] = {"__row__": lineno}  # type: ignore[dict-item]
        for i, h in enumerate(headers):
            if not h:
                continue
            row[h] = clean_cell(values[i]) if i < len(values) else None
        rows.append(row)
    return headers, rows


def resolve_columns(headers: Iterable[str], aliases: Mapping[str, Sequence[str]], file: Path,
                    optional: Iterable[str] = ()) -> dict[str, str]:
    """Map each concept in ``aliases`` to the actual header (case-insensitive). A required concept with no
    matching header is a DataError that names the file, the expected names and the headers found."""
    by_lower = {clean_header(h).lower(): clean_header(h) for h in headers if clean_header(h)}
    optional = set(optional)
    resolved: dict[str, str] = {}
    for concept, names in aliases.items():
        for n in names:
            if n.lower() in by_lower:
                resolved[concept] = by_lower[n.lower()]
                break
        else:
            if concept not in optional:
                raise DataError(
                    f"missing column for {concept!r}: expected one of {list(names)}; found {sorted(by_lower.values())}",
                    file=str(file))
    return resolved


def file_index(folder: Path, recursive: bool = False) -> dict[str, Path]:
    """Lower-cased file name -> path for the image files in ``folder`` (non-image files are ignored)."""
    index: dict[str, Path] = {}
    if not folder.is_dir():
        return index
    paths = folder.rglob("*") if recursive else folder.iterdir()
    for p in sorted(paths):
        if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES:
            index.setdefault(p.name.lower(), p)
    return index


class ImageMatcher:
    """The image files of one folder matched to the names one label file lists: names match in any case,
    each name may be listed once, a matched path must stay inside the dataset folder, and a missing or
    empty file skips its row (with the reason) instead of failing the load."""

    def __init__(self, root: Path, label_file: Path, image_dir: Path, recursive: bool = False):
        self.root = Path(root)
        self.label_file = Path(label_file)
        self.image_dir = Path(image_dir)
        self.images = file_index(self.image_dir, recursive=recursive)
        self.listed: dict[str, int | None] = {}  # lower-cased name -> the row that listed it
        self.missing = 0  # rows skipped because their file is absent

    def claim(self, name: str, row: int | None) -> None:
        """Note that ``row`` lists ``name``; a second row listing the same name (in any case) is a DataError,
        since one image would be counted twice."""
        key = name.lower()
        if key in self.listed:
            raise DataError(f"image {name!r} is listed twice (rows {self.listed[key]} and {row})",
                            file=str(self.label_file), row=row)
        self.listed[key] = row

    def claim_cell(self, row: dict, column: str) -> str:
        """The image name in ``column`` of a label row, claimed for that row; an empty cell is a DataError."""
        name = row[column]
        if name is None:
            raise DataError(f"empty {column!r} cell", file=str(self.label_file), row=row["__row__"])
        self.claim(name, row["__row__"])
        return name

    def find(self, name: str, row: int | None, image_id: str, missing: str) -> Path | Skipped:
        """The file ``name`` (any case) resolved inside the dataset folder, or a Skipped row with the reason
        ``missing`` when the folder has no such file."""
        path = self.images.get(name.lower())
        if path is None:
            self.missing += 1
            return Skipped(str(self.label_file), row, image_id, missing)
        return safe_path(self.root, path, self.label_file, row)

    def match(self, name: str, row: int | None, image_id: str, missing: str) -> Path | Skipped:
        """``find``, and a Skipped row when the file is empty as well."""
        path = self.find(name, row, image_id, missing)
        return path if isinstance(path, Skipped) else non_empty(path, self.label_file, row, image_id)

    def unlabelled_warnings(self) -> list[str]:
        """A warning when image files of the folder are listed in no row (those images are not read)."""
        unlabelled = sorted(set(self.images) - set(self.listed))
        if not unlabelled:
            return []
        return [f"{len(unlabelled)} image files in {self.image_dir} have no row in {self.label_file.name} "
                f"(e.g. {self.images[unlabelled[0]].name})"]


def non_empty(path: Path, file: Path, row: int | None, image_id: str) -> Path | Skipped:
    """``path``, or a Skipped row of ``file`` when the image file is empty (a broken download or copy)."""
    if path.stat().st_size == 0:
        return Skipped(str(file), row, image_id, f"image file {path} is empty")
    return path


def with_extension(name: str, default: str = ".jpg") -> str:
    """Append ``default`` to an image name that has no image extension (BRSET, IDRiD, some mBRSET copies)."""
    return name if Path(name).suffix.lower() in IMAGE_SUFFIXES else name + default


def safe_path(root: Path, candidate: Path | str, file: Path, row: int | None) -> Path:
    """Resolve ``candidate`` (relative to ``root`` if not absolute) and refuse anything outside ``root``."""
    root_resolved = Path(root).resolve()
    p = Path(candidate)
    full = (p if p.is_absolute() else root_resolved / p).resolve()
    if full != root_resolved and root_resolved not in full.parents:
        raise DataError(f"image path {str(candidate)!r} escapes the dataset folder {root_resolved}",
                        file=str(file), row=row)
    return full


def parse_number(value: str | None) -> float | None:
    """A numeric cell as float; None for empty. Raises ValueError for text that is not a number."""
    if value is None:
        return None
    return float(str(value).replace(",", "."))


def parse_grade(value: str | None, allowed: Sequence[int], file: Path, row: int | None, column: str) -> int | None:
    """An integer grade such as ICDR 0-4 (accepting '2', '2.0'); None when empty. Any other value is a
    DataError: labels are never recoded silently."""
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        raise DataError(f"column {column!r}: {value!r} is not a grade in {list(allowed)}", file=str(file), row=row) from None
    if not number.is_integer() or int(number) not in allowed:
        raise DataError(f"column {column!r}: {value!r} is not a grade in {list(allowed)}", file=str(file), row=row)
    return int(number)


def map_code(value: str | None, mapping: Mapping[str, str], file: Path, row: int | None, column: str) -> str | None:
    """Map a coded cell through ``mapping``; '1', '1.0' and 1 are the same code. None when empty; an unknown
    code is a DataError naming file, row, column and the accepted codes."""
    if value is None:
        return None
    key = str(value).strip()
    try:
        number = float(key)
        if number.is_integer():
            key = str(int(number))
    except ValueError:
        key = key.lower()
    lowered = {str(k).lower(): v for k, v in mapping.items()}
    if key.lower() not in lowered:
        raise DataError(f"column {column!r}: unknown code {value!r}; expected one of {sorted(mapping)}",
                        file=str(file), row=row)
    return lowered[key.lower()]


def parse_age(value: str | None, file: Path, row: int | None, column: str) -> float | None:
    """Age in years: '>= 90' style caps map to 90; empty -> None; non-numeric text is a DataError."""
    if value is None:
        return None
    text = str(value).strip().replace(" ", "")
    for prefix in (">=", ">"):
        if text.startswith(prefix):
            return 90.0
    try:
        age = float(text.replace(",", "."))
    except ValueError:
        raise DataError(f"column {column!r}: age {value!r} is not a number", file=str(file), row=row) from None
    return age


def referable_dr(grade: int | None, edema: int | None) -> int | None:
    """Referable DR from an ICDR grade and a macular-edema value (0 = none): grade >= 2 or any edema. None
    when a missing value could change the answer."""
    if (grade is not None and grade >= 2) or (edema is not None and edema >= 1):
        return 1
    if grade is None or edema is None:
        return None
    return 0


def implausible_ages(records, low: float = 18.0, high: float = 100.0) -> list[str]:
    """Warnings for ages below ``low`` or above ``high`` (the rows are kept, never dropped)."""
    return [f"{r.image_id}: implausible age {r.age:g}" for r in records
            if r.age is not None and (r.age < low or r.age > high)]


def read_xlsx_rows(path: Path, sheet: str | None = None) -> tuple[list[str], list[dict[str, str | None]]]:
    """Read one sheet of an .xlsx file like ``read_csv_rows``: the first non-empty row is the header,
    cells are cleaned to text, and each row dict carries ``__row__`` (the sheet's 1-based row number)."""
    from openpyxl import load_workbook

    try:
        book = load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises several unrelated types for a damaged file
        raise DataError(f"cannot read as an .xlsx workbook: {exc}", file=str(path)) from exc
    try:
        if sheet is not None and sheet not in book.sheetnames:
            raise DataError(f"no sheet {sheet!r}; sheets are {book.sheetnames}", file=str(path))
        table = book[sheet] if sheet is not None else book.worksheets[0]
        headers: list[str] | None = None
        rows: list[dict[str, str | None]] = []
        for lineno, values in enumerate(table.iter_rows(values_only=True), start=1):
            cells = [clean_cell(v) for v in values]
            if not any(c is not None for c in cells):
                continue
            if headers is None:
                headers = [clean_header(v) for v in values]
                continue
            row: dict[str, str | None] = {"__row__": lineno}  # type: ignore[dict-item]
            for i, h in enumerate(headers):
                if h:
                    row[h] = cells[i] if i < len(cells) else None
            rows.append(row)
    finally:
        book.close()
    if headers is None:
        raise DataError("empty sheet", file=str(path))
    return headers, rows


def find_dir_near(anchor: Path, root: Path, names: Sequence[str]) -> Path | None:
    """The folder named one of ``names`` closest to ``anchor``: search below ``anchor``'s folder, then below
    each parent up to ``root``, and return the shallowest match at the first level that has one. Two
    equally close matches are a DataError, since picking one would be a guess."""
    start = anchor if anchor.is_dir() else anchor.parent
    root = Path(root)
    level = start
    while True:
        found = find_dirs(level, names)
        if found:
            depth = len(found[0].relative_to(level).parts)
            tied = [p for p in found if len(p.relative_to(level).parts) == depth]
            if len(tied) > 1:
                raise DataError(f"ambiguous image folders {[str(p) for p in tied]}; expected one of {list(names)}",
                                file=str(anchor))
            return found[0]
        if level == root or root not in level.parents:
            return None
        level = level.parent


def label_counts(records, targets: Sequence[str]) -> dict[str, dict[str, int]]:
    """Per split: number of images and, per target, positives and negatives (for the load log)."""
    counts: dict[str, dict[str, int]] = {}
    for r in records:
        entry = counts.setdefault(str(r.split), {"n": 0})
        entry["n"] += 1
        for target in targets:
            value = getattr(r, target)
            if value is not None:
                key = f"{target}_pos" if value == 1 else f"{target}_neg"
                entry[key] = entry.get(key, 0) + 1
    return counts


def count_warnings(dataset: str, counts: Mapping[str, Mapping[str, int]],
                   documented: Mapping[str, Mapping[str, int]]) -> list[str]:
    """One warning listing every loaded count that differs from the documented one; counts never fail a
    load, since releases and copies differ."""
    differences = []
    for split, expected in documented.items():
        found = counts.get(split, {})
        for key, value in expected.items():
            if found.get(key, 0) != value:
                differences.append(f"{split} {key} {found.get(key, 0)} (documented {value})")
    if not differences:
        return []
    return [f"{dataset}: counts differ from the documented release: " + ", ".join(differences)]


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


def relative_to(root: Path, path: Path) -> str:
    """``path`` relative to ``root`` in POSIX form, both resolved (the record's ``relpath``)."""
    return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()


def inconsistent_within_patient(records, attribute: str) -> list[str]:
    """Patient ids whose images disagree on ``attribute`` (missing values ignored), for load warnings."""
    seen: dict[str, set] = {}
    for r in records:
        value = getattr(r, attribute)
        if value is not None:
            seen.setdefault(r.patient_id, set()).add(value)
    return [p for p, values in seen.items() if len(values) > 1]


def documented_count_warnings(dataset: str, records, targets, documented) -> list[str]:
    """Compare all-image counts with the documented ones (warnings only; copies and releases differ)."""
    if not documented:
        return []
    counts = label_counts(records, targets).get("None", {"n": 0})
    return count_warnings(dataset, {"all images": counts}, {"all images": documented})


def listed_file(root: Path, folder: Path, name: str, index: Mapping[str, Path], file: Path,
                row: int | None) -> Path | None:
    """The file ``name`` from ``index`` (a listing of ``folder``, which lies inside the resolved ``root``), or
    None when it is not there. A name that points outside ``root`` (``../``) or a symlink that leads outside
    it is a DataError. Only those two cases touch the file system beyond the listing, which keeps readers
    fast on tens of thousands of rows."""
    if "/" in name or "\\" in name or name.startswith(".."):
        safe_path(root, folder / name, file, row)
    found = index.get(Path(name).name.lower())
    if found is None or found.name.lower() != name.lower():
        return None
    return safe_path(root, found, file, row) if found.is_symlink() else found
