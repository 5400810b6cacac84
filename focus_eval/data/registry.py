"""Dataset registry: registry name -> reader module (imported lazily), and ``load_dataset``, which reads a
dataset folder, applies the cohort, assigns and checks the splits."""

from __future__ import annotations

import difflib
import importlib
import os
from pathlib import Path
from types import ModuleType

from focus_eval.data import splits
from focus_eval.data.records import DatasetLoad
from focus_eval.errors import DataError, FocusError

_READERS = "focus_eval.data.readers"

DATASETS: dict[str, str] = {
    "brset": f"{_READERS}.brset",
    "mbrset": f"{_READERS}.mbrset",
    "papila": f"{_READERS}.papila",
    "rfmid": f"{_READERS}.rfmid",
    "rfmid2": f"{_READERS}.rfmid2",
    "idrid": f"{_READERS}.idrid",
    "messidor2": f"{_READERS}.messidor2",
    "refuge": f"{_READERS}.refuge",
    "g1020": f"{_READERS}.g1020",
    "jsiec": f"{_READERS}.jsiec",
    "synth_desktop": f"{_READERS}.synth",
    "synth_mobile": f"{_READERS}.synth",
}
REAL_DATASETS = ("brset", "mbrset", "papila", "rfmid", "rfmid2", "idrid", "messidor2", "refuge", "g1020", "jsiec")
READER_API = ("read", "TARGETS", "COHORTS", "DEFAULT_COHORT", "OFFICIAL_SPLIT", "GROUP_KEY")
DATA_ROOT_ENV = "FOCUS_DATA"


def check_name(name: str) -> str:
    """Return ``name`` if it is a registry name, else a FocusError suggesting close matches."""
    if name not in DATASETS:
        close = difflib.get_close_matches(name, DATASETS, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; known datasets: {', '.join(DATASETS)}"
        raise FocusError(f"unknown dataset {name!r}{hint}")
    return name


def reader(name: str) -> ModuleType:
    """The reader module of a registry name, imported on first use and checked against the reader contract."""
    module_name = DATASETS[check_name(name)]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        raise FocusError(f"no reader is installed for dataset {name!r} (module {module_name})") from None
    missing = [attr for attr in READER_API if not hasattr(module, attr)]
    if missing:
        raise FocusError(f"reader {module_name} lacks {', '.join(missing)}")
    return module


def data_root(value: str | os.PathLike | None = None) -> Path:
    """The data root: ``value`` if given, else the FOCUS_DATA environment variable."""
    value = value if value is not None else os.environ.get(DATA_ROOT_ENV)
    if not value:
        raise FocusError(f"no data root: pass --data-root DIR or set {DATA_ROOT_ENV}")
    return Path(value).expanduser()


def dataset_folder(root: str | os.PathLike | None, name: str) -> Path:
    """DATA_ROOT/<name>/, the folder a user extracts a dataset's archive into."""
    return data_root(root) / check_name(name)


def read_dataset(name: str, root: str | os.PathLike | None = None) -> DatasetLoad:
    """Every image a reader finds in DATA_ROOT/<name>/, before cohort and split (a DataError naming the
    expected path if the folder is absent)."""
    folder = dataset_folder(root, name)
    if not folder.is_dir():
        raise DataError(f"dataset folder not found; extract the {name} archive into {folder}", file=str(folder))
    load = reader(name).read(folder)
    load.name = name
    for record in load.records:
        record.dataset = name
    load.metadata.setdefault("label_file", None)
    load.metadata.setdefault("version", None)
    return load


def select_cohort(load: DatasetLoad, cohort: str | None = None) -> DatasetLoad:
    """Keep the records of ``cohort`` (the reader's DEFAULT_COHORT if None); records it in metadata."""
    module = reader(load.name)
    cohort = cohort or module.DEFAULT_COHORT
    if cohort not in module.COHORTS:
        raise FocusError(f"unknown cohort {cohort!r} for {load.name}; known cohorts: {', '.join(module.COHORTS)}")
    keep = module.COHORTS[cohort]
    before = len(load.records)
    load.records = [r for r in load.records if keep(r)]
    load.metadata["cohort"] = cohort
    load.metadata["cohort_excluded"] = before - len(load.records)
    return load


def assign_splits(load: DatasetLoad, split_file: str | os.PathLike | None = None,
                  seed: int = splits.DEFAULT_SEED) -> DatasetLoad:
    """Assign splits per the split policy: an external file if given, else the official split (with a carved
    val part where it has none), else the grouped stratified 60/20/20 split."""
    module = reader(load.name)
    load.metadata["seed"] = seed
    if split_file is not None:
        _apply_file(load, Path(split_file))
    elif module.OFFICIAL_SPLIT:
        unsplit = [r.image_id for r in load.records if r.split is None]
        if unsplit:
            raise DataError(f"{len(unsplit)} image(s) have no official split, e.g. {unsplit[0]!r}",
                            file=str(load.root))
        load.metadata["split_source"] = "official"
        if load.records and not any(r.split == "val" for r in load.records):
            moved = splits.carve_validation(load.records, seed)
            load.metadata["split_source"] = "official+carved_val"
            load.metadata["carved_val_images"] = moved
    else:
        splits.grouped_split(load.records, seed)
        load.metadata["split_source"] = "grouped_stratified"
    return load


def _apply_file(load: DatasetLoad, path: Path) -> None:
    result = splits.apply_split_file(load.records, path)
    load.records = result.records
    load.metadata.update(split_source=f"file:{path}", split_file_unlisted=result.unlisted,
                         split_file_missing=result.missing_ids, patient_overlap=result.patient_overlap)
    if result.unlisted:
        load.warnings.append(f"split file {path}: {result.unlisted} image(s) not listed were left out")
    if result.missing_ids:
        shown = ", ".join(result.missing_ids[:5])
        load.warnings.append(f"split file {path}: {len(result.missing_ids)} listed id(s) have no image ({shown})")
    if result.patient_overlap:
        shown = ", ".join(result.patient_overlap[:5])
        load.warnings.append(f"split file {path}: {len(result.patient_overlap)} patient(s) occur in more than one "
                             f"split ({shown}); accepted for reproduction only")


def split_counts(load: DatasetLoad) -> dict[str, int]:
    return {s: sum(1 for r in load.records if r.split == s) for s in splits.SPLITS}


def load_dataset(name: str, data_root: str | os.PathLike | None = None, cohort: str | None = None,
                 split_file: str | os.PathLike | None = None, seed: int = splits.DEFAULT_SEED) -> DatasetLoad:
    """Read DATA_ROOT/<name>/, apply the cohort, assign splits and run the split check.

    ``metadata`` then holds at least: cohort, split_source, seed, label_file, version, group_key, splits.
    """
    load = read_dataset(name, data_root)
    select_cohort(load, cohort)
    assign_splits(load, split_file, seed)
    splits.check_splits(load.records, allow_patient_overlap=split_file is not None, source=f"{name} splits")
    load.metadata["group_key"] = reader(name).GROUP_KEY
    load.metadata["splits"] = split_counts(load)
    return load
