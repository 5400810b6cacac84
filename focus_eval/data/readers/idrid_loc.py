"""Reader for IDRiD part C (Localization): optic disc and fovea centres per image, official train/test split.
It reads the same DATA_ROOT/idrid/ folder as the part-B reader (one download holds parts A, B and C).

Raw layout, inside ``C. Localization/`` (found at any depth)::

    1. Original Images/a. Training Set/IDRiD_001.jpg ...   b. Testing Set/IDRiD_001.jpg ...
    2. Groundtruths/1. Optic Disc Center Location/a. IDRiD_OD_Center_Training Set_Markups.csv, b. ..._Testing...
    2. Groundtruths/2. Fovea Center Location/IDRiD_Fovea_Center_Training Set_Markups.csv, ..._Testing...

Each CSV lists ``Image No, X- Coordinate, Y - Coordinate`` (pixels of the original image), often followed by
empty columns and empty rows. Names restart per split, so ids are ``<split>/<name>``. Fields:
``fovea_position`` (the side of the image the fovea lies on relative to the disc centre) and ``laterality``
(a right eye has its disc to the right of the fovea), both from ``focus_eval.data.lesion_geometry``; the
centres themselves are kept in ``extra``. A centre outside its image's frame (``lesion_geometry.in_frame``, the
size read from the image header) is read as missing, counted in ``implausible_centres`` and named with its file
and row in a warning, as implausible ages are. No binary target.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from focus_eval.data.cells import clean_id, parse_number
from focus_eval.data.files import find_dirs, find_label_file, relative_to, with_extension
from focus_eval.data.images import image_size
from focus_eval.data.lesion_geometry import Point, fovea_side, in_frame, laterality
from focus_eval.data.matching import ImageMatcher, Listed, read_rows, warn_implausible
from focus_eval.data.records import DatasetLoad
from focus_eval.data.spec import ReaderSpec
from focus_eval.data.tables import read_csv_rows, resolve_columns
from focus_eval.errors import DataError

PART = "C. Localization"
SPEC = ReaderSpec(
    name="idrid_loc",
    targets=(),
    official_split=True,
    group_key="image (no patient id; official train/test split, names restart per split)",
    documented_counts={"train": {"n": 413}, "test": {"n": 103}},
    folder="idrid",
    part=PART,
)

# split -> landmark -> label file names (the release's, then the same without the "a. "/"b. " prefix)
CENTRE_FILES = {
    "train": {"disc": ("a. IDRiD_OD_Center_Training Set_Markups.csv", "IDRiD_OD_Center_Training Set_Markups.csv"),
              "fovea": ("IDRiD_Fovea_Center_Training Set_Markups.csv",
                        "a. IDRiD_Fovea_Center_Training Set_Markups.csv")},
    "test": {"disc": ("b. IDRiD_OD_Center_Testing Set_Markups.csv", "IDRiD_OD_Center_Testing Set_Markups.csv"),
             "fovea": ("IDRiD_Fovea_Center_Testing Set_Markups.csv", "b. IDRiD_Fovea_Center_Testing Set_Markups.csv")},
}
class Centre(NamedTuple):
    """One landmark centre of a centre file: (x, y) in pixels (None when a coordinate is empty) and its row."""

    point: Point | None
    row: int | None


IMAGE_DIRS = {"train": "a. Training Set", "test": "b. Testing Set"}
ORIGINALS = "1. Original Images"
COLUMNS = {"image": ("Image No", "Image name"), "x": ("X- Coordinate", "X-Coordinate", "X Coordinate", "X"),
           "y": ("Y - Coordinate", "Y-Coordinate", "Y Coordinate", "Y")}


def read(folder: Path) -> DatasetLoad:
    folder = Path(folder)
    load = SPEC.new_load(folder)
    label_files = {}
    for split, files in CENTRE_FILES.items():
        found = {landmark: find_label_file(folder, names, f"IDRiD {split} {landmark} centre file "
                                           f"({PART}/2. Groundtruths/.../{names[0]})", load.warnings)
                 for landmark, names in files.items()}
        image_dir = _image_dir(folder, found["disc"], split)
        label_files[split] = {k: relative_to(folder, v) for k, v in found.items()}
        _read_split(folder, split, found, image_dir, load)
    return SPEC.finish_load(load, label_files)


def _image_dir(folder: Path, label_file: Path, split: str) -> Path:
    """The split's image folder of the part the label file belongs to (its ``1. Original Images``)."""
    part = next((p for p in label_file.parents if p.name.lower() == PART.lower()), None)
    originals = find_dirs(part, (ORIGINALS,)) if part is not None else []
    image_dirs = find_dirs(originals[0], (IMAGE_DIRS[split],)) if originals else []
    if not image_dirs:
        raise DataError(f"no image folder '{PART}/{ORIGINALS}/{IMAGE_DIRS[split]}' found for the {split} "
                        "centre file", file=str(label_file))
    return image_dirs[0]


def _centres(label_file: Path) -> tuple[list[dict], dict[str, Centre]]:
    """(rows, lower-cased image name -> (x, y) or None when a coordinate is empty, and its row) of one centre
    file."""
    headers, rows = read_csv_rows(label_file)
    columns = resolve_columns(headers, COLUMNS, label_file)
    centres = {}
    for row in rows:
        line = row["__row__"]
        name = with_extension(clean_id(row[columns["image"]], label_file, line, columns["image"]), ".jpg")
        x = parse_number(row[columns["x"]], label_file, line, columns["x"])
        y = parse_number(row[columns["y"]], label_file, line, columns["y"])
        row["__name__"] = name
        centres[name.lower()] = Centre(None if x is None or y is None else (x, y), line)
    return rows, centres


def _read_split(folder: Path, split: str, files: dict[str, Path], image_dir: Path, load: DatasetLoad) -> None:
    rows, discs = _centres(files["disc"])
    foveas = _centres(files["fovea"])[1]
    unmatched = sorted(set(discs) - set(foveas))
    if unmatched:
        load.warnings.append(f"{files['fovea'].name}: no fovea centre for {len(unmatched)} image(s) of the disc "
                             f"centre file (e.g. {unmatched[0]}); their position and laterality are unknown")

    def listed(row: dict) -> Listed:
        name = row["__name__"]
        return Listed(name, f"{split}/{Path(name).stem}", row["__row__"], dict(split=split, modality="cfp"))

    first = len(load.records)
    read_rows(load, ImageMatcher(folder, files["disc"], image_dir), rows, listed)
    outside: dict[str, list[tuple[int | None, str]]] = {"disc": [], "fovea": []}
    for record in load.records[first:]:  # a record's file name is its row's image name, in some case
        size, points = None, {}
        name = record.path.name.lower()
        for landmark, centre in (("disc", discs[name]), ("fovea", foveas.get(name, Centre(None, None)))):
            point = centre.point
            if point is not None:
                size = size or image_size(record.path)  # the header only
                if not in_frame(point, size):
                    outside[landmark].append((centre.row, f"{point[0]:g}, {point[1]:g} in {size[0]} x {size[1]}"))
                    point = None
            points[landmark] = point
        disc, fovea = points["disc"], points["fovea"]
        record.fovea_position, record.laterality = fovea_side(disc, fovea), laterality(disc, fovea)
        record.extra = {"disc_centre": disc, "fovea_centre": fovea}
    for landmark, cases in outside.items():
        if cases:
            warn_implausible(load, "implausible_centres", files[landmark], f"{landmark} centre(s) outside the image",
                             "inside: finite, 0 <= x <= width and 0 <= y <= height in pixels", cases)
