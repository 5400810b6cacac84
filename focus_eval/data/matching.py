"""Matching the image names a label file lists to the image files of a folder: one ``ImageMatcher`` per
label file, and ``read_rows``, the loop every label-file reader runs (row -> image file -> record, or a
reported skip)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, TypeVar

from focus_eval.data.cells import AGE_MAX, AGE_MIN, plausible_age
from focus_eval.data.files import image_files, normalised_name, printable, safe_path
from focus_eval.data.records import DatasetLoad, ImageRecord, Skipped
from focus_eval.errors import DataError

T = TypeVar("T")


def usable_file(root: Path, path: Path, file: Path | str, row: int | None, image_id: str) -> Path | Skipped:
    """``path`` resolved inside ``root`` (a DataError when it escapes), or a Skipped row of ``file`` when the
    image file is empty (a broken download or copy)."""
    return _non_empty(safe_path(root, path, file, row), file, row, image_id)


def _non_empty(path: Path, file: Path | str, row: int | None, image_id: str) -> Path | Skipped:
    if path.stat().st_size == 0:
        return Skipped(str(file), row, image_id, f"image file {path} is empty")
    return path


class ImageMatcher:
    """The image files of one folder matched to the names one label file lists: names match in any case,
    each name may be listed once, a matched path must stay inside the dataset folder, and a missing or
    empty file skips its row (with the reason) instead of failing the load.

    ``images`` replaces the listing of ``image_dir`` (a reader that filters or searches differently);
    ``recursive`` lists sub-folders too (hidden ones skipped, the shallowest copy of a name wins);
    ``allow_empty`` keeps empty files (decoding then reports them)."""

    def __init__(self, root: Path, label_file: Path, image_dir: Path, recursive: bool = False,
                 images: Mapping[str, Path] | None = None, allow_empty: bool = False):
        self.allow_empty = allow_empty
        self.root = Path(root).resolve()
        self.label_file = Path(label_file)
        self.image_dir = safe_path(self.root, image_dir, label_file, None)
        self.images = dict(images) if images is not None else image_files(self.image_dir, recursive)[0]
        self.listed: dict[str, int | None] = {}  # lower-cased name -> the row that listed it
        self.missing = 0  # rows skipped because their file is absent

    def claim(self, name: str, row: int | None) -> None:
        """Note that ``row`` lists ``name``; a second row listing the same name (in any case, and in any spelling
        of the same path: ``normalised_name``) is a DataError, since one image would be counted twice."""
        normal = normalised_name(name)
        key = normal.lower()
        if key in self.listed:
            spelt = f" ({normal})" if normal != name else ""
            raise DataError(f"image {name!r}{spelt} is listed twice (already listed on row {self.listed[key]})",
                            file=str(self.label_file), row=row)
        self.listed[key] = row

    def resolve(self, name: str, *, row: int | None, image_id: str | None = None,
                excluded: str | None = None) -> Path | Skipped:
        """Claim ``name`` for ``row`` and return its image file, or a Skipped row with the reason: the row is
        ``excluded`` (a reason the reader gives, such as an ungradable image), or the file is missing or
        empty. A name that points outside the dataset folder is a DataError."""
        self.claim(name, row)
        image_id = name if image_id is None else image_id
        if excluded is not None:
            return Skipped(str(self.label_file), row, image_id, excluded)
        if "/" in name or "\\" in name or name.startswith(".."):
            safe_path(self.root, self.image_dir / name, self.label_file, row)
        path = self.images.get(Path(name).name.lower())
        if path is None or path.name.lower() != name.lower():
            self.missing += 1
            return Skipped(str(self.label_file), row, image_id,
                           f"image file not found: {name} (any case) is missing from {self.image_dir}, "
                           "so the label row has no image")
        if path.is_symlink():  # only a link can lead outside; resolving every file would slow large folders
            path = safe_path(self.root, path, self.label_file, row)
        return path if self.allow_empty else _non_empty(path, self.label_file, row, image_id)

    def warnings(self) -> list[str]:
        """Warnings for label rows whose file is missing, and for image files no row lists (not read)."""
        warnings = []
        if self.missing:
            warnings.append(f"{self.label_file.name}: {self.missing} label rows have no image file and were skipped")
        unlabelled = sorted(set(self.images) - set(self.listed))
        if unlabelled:
            warnings.append(f"{len(unlabelled)} image files in {self.image_dir} have no row in "
                            f"{self.label_file.name} (e.g. {self.images[unlabelled[0]].name})")
        return warnings


@dataclass
class Listed:
    """What one label row says: the image name it lists, the id its record (or skip) gets, its row number for
    messages, the other ImageRecord fields (labels, patient_id, split, age, sex, quality, extra; an
    ``image_id`` here gives the record an id other than the skip's), and, for a row the reader leaves out
    on purpose, the reason."""

    name: str
    image_id: str
    row: int | None
    fields: dict[str, Any] = field(default_factory=dict)
    excluded: str | None = None


def add_image(load: DatasetLoad, root: Path, path: Path | Skipped, image_id: str, fields: dict[str, Any],
              origin: str | None = None) -> None:
    """Add to ``load`` the record of a usable image file (``path`` resolved inside the resolved ``root``;
    ``patient_id`` defaults to the image id, ``fields`` are the other ImageRecord fields), or its skip.
    ``origin`` names the label row the record comes from; an image id that already has a record is a
    DataError naming both places, since one image would be counted twice (perhaps with two labels)."""
    if isinstance(path, Skipped):
        load.skipped.append(path)
        return
    image_id = printable(image_id)  # ids and paths from file names that are not UTF-8 get \\x escapes
    fields = {"image_id": image_id, "patient_id": image_id, **fields}
    relpath = printable(path.relative_to(root).as_posix())
    where = f"{origin} ({relpath})" if origin else relpath
    image_id = fields["image_id"] = printable(fields["image_id"])
    if image_id in load.origins:
        raise _given_twice(load, image_id, load.origins[image_id], where)
    record = ImageRecord(dataset=load.name, path=path, relpath=relpath, **fields)
    canonical = os.path.realpath(path)
    first = load.files.get(canonical)
    if first is not None:
        # one file under two names (a symbolic link): it enters once, when both places say the same about it
        _check_agree(load, first, load.origins[first.image_id], record, where, canonical)
        reason = f"the same file as {load.origins[first.image_id]} ({printable(canonical)}); read once"
        load.skipped.append(Skipped(origin or str(load.root), None, image_id, reason))
        return
    load.origins[image_id] = where
    load.files[canonical] = record
    load.records.append(record)


# what two records of one file must agree on: everything but the names, where the file lies, and the extra cells
_NOT_COMPARED = {"dataset", "image_id", "path", "relpath", "extra"}


def disagreements(first: ImageRecord, second: ImageRecord) -> list[str]:
    """The record fields (labels, patient, split, metadata) on which two records of one image file differ."""
    return [f.name for f in fields(ImageRecord)
            if f.name not in _NOT_COMPARED and getattr(first, f.name) != getattr(second, f.name)]


def _check_agree(load: DatasetLoad, first: ImageRecord, first_where: str, second: ImageRecord, second_where: str,
                 canonical: str) -> None:
    """A DataError naming the file and both places when two records of one file say different things about it."""
    differ = disagreements(first, second)
    if differ:
        raise DataError(f"{second_where} (image {second.image_id!r}) and {first_where} (image {first.image_id!r}) "
                        f"are one file, {printable(canonical)}, and disagree on {', '.join(differ)}; one file is "
                        "one image: list it once", file=str(load.root))
    load.warnings.append(f"{second_where}, image {second.image_id!r}, is the same file as {first_where} "
                         f"({printable(canonical)}); read once")


def check_unique_ids(load: DatasetLoad) -> None:
    """A DataError naming both places when two records of ``load`` share an image id, or share an image file
    and disagree about it (a second record of one file that agrees is dropped, with a warning): the net under
    readers that build their records without ``add_image`` (which checks as it goes)."""
    first: dict[str, ImageRecord] = {}
    for record in load.records:
        other = first.setdefault(record.image_id, record)
        if other is not record:
            raise _given_twice(load, record.image_id, other.relpath, record.relpath)
    if len(load.files) != len(load.records):  # some records did not come through add_image
        _check_unique_files(load)


def _check_unique_files(load: DatasetLoad) -> None:
    files: dict[str, ImageRecord] = {}
    kept = []
    for record in load.records:
        canonical = os.path.realpath(record.path)
        other = files.setdefault(canonical, record)
        if other is record:
            kept.append(record)
            continue
        _check_agree(load, other, other.relpath, record, record.relpath, canonical)
    load.records = kept


def _given_twice(load: DatasetLoad, image_id: str, first: str, second: str) -> DataError:
    return DataError(f"image id {image_id!r} is given twice: by {first} and by {second}", file=str(load.root))


def read_rows(load: DatasetLoad, matcher: ImageMatcher, rows: Iterable[T], listed: Callable[[T], Listed]) -> None:
    """For each row: parse it (``listed``; label errors stop the load), match its image, and add the record
    or the reported skip to ``load``; then the matcher's warnings."""
    implausible: list[tuple[int | None, float]] = []
    for item in rows:
        entry = listed(item)
        if not plausible_age(entry.fields.get("age")):
            implausible.append((entry.row, entry.fields["age"]))
            entry.fields["age"] = None
        path = matcher.resolve(entry.name, row=entry.row, image_id=entry.image_id, excluded=entry.excluded)
        origin = str(matcher.label_file) if entry.row is None else f"{matcher.label_file}, row {entry.row}"
        add_image(load, matcher.root, path, entry.image_id, entry.fields, origin)
    load.warnings.extend(matcher.warnings())
    if implausible:
        _warn_ages(load, matcher.label_file, implausible)


def _warn_ages(load: DatasetLoad, label_file, implausible: list[tuple[int | None, float]]) -> None:
    """Count the ages read as missing (``load.metadata["implausible_ages"]``) and name their rows."""
    warn_implausible(load, "implausible_ages", label_file, "implausible age(s)",
                     f"plausible: above {AGE_MIN:g} and at most {AGE_MAX:g} years; 0 is a missing-value code",
                     [(row, f"{age:g}") for row, age in implausible])


def warn_implausible(load: DatasetLoad, key: str, label_file, what: str, rule: str,
                     cases: list[tuple[int | None, str]]) -> None:
    """The one report of implausible values read as missing: their count added to ``load.metadata[key]`` and
    one warning naming the label file, the rule and the rows (the first ten, with the value each row gives)."""
    load.metadata[key] = load.metadata.get(key, 0) + len(cases)
    shown = ", ".join(f"row {row} ({value})" for row, value in cases[:10])
    more = f" and {len(cases) - 10} more" if len(cases) > 10 else ""
    load.warnings.append(f"{label_file}: {len(cases)} {what} read as missing ({rule}): {shown}{more}")
