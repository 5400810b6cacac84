"""Dataset registry: registry name -> reader (a module's ``SPEC`` and ``read``, imported on first use), and
``load_dataset``, which reads a dataset folder, applies the cohort, assigns and checks the splits.

Other packages add datasets through the ``focus_eval.datasets`` entry-point group or ``register_dataset``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from focus_eval.data import splits
from focus_eval.data.checks import count_warnings, label_counts
from focus_eval.data.files import admission, find_dirs
from focus_eval.data.matching import check_unique_ids
from focus_eval.data.records import DatasetLoad
from focus_eval.data.spec import ReaderSpec
from focus_eval.errors import DataError, FocusError
from focus_eval.registry import Registry, import_target

_READERS = "focus_eval.data.readers"
# registry name -> reader module under focus_eval.data.readers (one module may serve several names)
BUILTIN = {
    "brset": "brset", "mbrset": "mbrset", "papila": "papila", "rfmid": "rfmid", "rfmid2": "rfmid2",
    "idrid": "idrid", "messidor2": "messidor2", "refuge": "refuge", "g1020": "g1020", "jsiec": "jsiec",
    "synth_desktop": "synth", "synth_mobile": "synth",
    "oia_odir": "oia_odir", "deepdrid": "deepdrid", "octdl": "octdl", "oct2017": "oct2017",
    "idrid_seg": "idrid_seg", "idrid_loc": "idrid_loc", "ddr": "ddr", "retinal_lesions": "retinal_lesions",
    "mmc_amd": "mmc_amd", "octid": "octid", "neh": "neh", "retouch": "retouch", "top": "top",
    "funbench_pool": "funbench_pool",
}
SYNTHETIC_DATASETS = ("synth_desktop", "synth_mobile")
# datasets made of other registered datasets (no download of their own, no raw layout)
POOLED_DATASETS = ("funbench_pool",)
REAL_DATASETS = tuple(name for name in BUILTIN if name not in SYNTHETIC_DATASETS + POOLED_DATASETS)
DATA_ROOT_ENV = "FOCUS_DATA"


def _builtin() -> None:
    for name, module in BUILTIN.items():
        READERS.register(name, f"{_READERS}.{module}:SPEC")


READERS = Registry("dataset", entry_point_group="focus_eval.datasets", builtin=_builtin)


@dataclass(frozen=True)
class Reader:
    """A registered dataset reader: its spec and its ``read(folder) -> DatasetLoad`` function."""

    spec: ReaderSpec
    read: Callable[[Path], DatasetLoad]


# registry name -> its folder, for datasets registered with one (a manifest dataset outside the data root)
_FOLDERS: dict[str, Path] = {}


def register_dataset(name: str, target: str | Any, *, replace: bool = False,
                     folder: str | os.PathLike | None = None) -> None:
    """Register dataset ``name`` (read from DATA_ROOT/<name>/, or from ``folder`` when given). ``target`` is
    ``"module:SPEC"`` (the module also defines ``read``), a module path or ``"module:attr"`` naming an object
    with ``SPEC`` and ``read``, such an object itself, or a ``Reader``."""
    READERS.register(name, target, replace=replace)
    if folder is not None:
        _FOLDERS[name] = Path(folder).expanduser().resolve()
    else:
        _FOLDERS.pop(name, None)


def dataset_names() -> list[str]:
    """Every registered dataset name, built-in ones first."""
    return READERS.names()


def check_name(name: str) -> str:
    """Return ``name`` if it is a registry name, else a FocusError suggesting close matches."""
    return READERS.check(name)


def reader(name: str) -> Reader:
    """The reader of a registry name, imported on first use and checked against the reader contract."""
    found = READERS.get(name)
    if isinstance(found, Reader):
        return found
    target = READERS.target(name)
    if isinstance(found, ReaderSpec):
        # "module:SPEC": the read function lives beside the spec
        owner = import_target(target.partition(":")[0]) if isinstance(target, str) else None
        spec, read = found, getattr(owner, "read", None)
    else:
        spec, read = getattr(found, "SPEC", None), getattr(found, "read", None)
    if not isinstance(spec, ReaderSpec) or not callable(read):
        raise FocusError(f"dataset {name!r}: {target!r} is not a reader; expected a module (or object) with a "
                         "SPEC = ReaderSpec(...) and a read(folder) function")
    return Reader(spec, read)


def data_root(value: str | os.PathLike | None = None) -> Path:
    """The data root as an absolute path: ``value`` if given, else the FOCUS_DATA environment variable."""
    value = value if value is not None else os.environ.get(DATA_ROOT_ENV)
    if not value:
        raise FocusError(f"no data root: pass --data-root DIR or set {DATA_ROOT_ENV}")
    # Resolved once here: readers join label-file paths onto the dataset folder and then check them against
    # it, so a relative folder would be joined twice (DATA/brset/DATA/brset/...).
    return Path(value).expanduser().resolve()


def optional_data_root(value: str | os.PathLike | None) -> Path | None:
    """A command's ``--data-root`` value made absolute at the command boundary; None when it is not set."""
    return data_root(value) if value else None


def dataset_folder(root: str | os.PathLike | None, name: str) -> Path:
    """DATA_ROOT/<name>/, the folder a user extracts a dataset's archive into (or the folder it was registered
    with, or the shared folder its spec names)."""
    if name in _FOLDERS:
        return _FOLDERS[name]
    return data_root(root) / folder_name(name)


def folder_name(name: str) -> str:
    """The folder under the data root that dataset ``name`` reads: its spec's ``folder``, else its name."""
    return reader(check_name(name)).spec.folder or name


def dataset_present(root: str | os.PathLike | None, name: str) -> bool:
    """Whether the folder of ``name`` exists and, for a reader of one part of a shared folder, holds that
    part (a folder named as the spec's ``part``, at any depth)."""
    folder = dataset_folder(root, name)
    if not folder.is_dir():
        return False
    part = reader(name).spec.part if name not in _FOLDERS else None
    return part is None or bool(find_dirs(folder, (part,)))


def read_dataset(name: str, root: str | os.PathLike | None = None) -> DatasetLoad:
    """Every image a reader finds in DATA_ROOT/<name>/, before cohort and split (a DataError naming the
    expected path if the folder is absent), with its counts checked against the documented ones."""
    folder = dataset_folder(root, name)
    if not folder.is_dir():
        raise DataError(f"dataset folder not found; extract the {name} archive into {folder}", file=str(folder))
    found = reader(name)
    with admission() as tally:
        load = found.read(folder)
    load.warnings.extend(tally.warnings())
    check_unique_ids(load)
    load.name = name
    for record in load.records:
        record.dataset = name
        if record.modality is None:  # the one place every reader's records pass, with or without read_rows
            record.modality = found.spec.modality
    load.metadata.setdefault("label_file", None)
    load.metadata.setdefault("version", None)
    _check_counts(load, found.spec)
    return load


def _check_counts(load: DatasetLoad, spec: ReaderSpec) -> None:
    """Counts per split (or over all images) and a warning where they differ from the documented figures:
    the spec's, unless the reader recognised a release and gave that release's in metadata."""
    counts = label_counts(load.records, spec.targets)
    documented = load.metadata.setdefault("documented_counts", dict(spec.documented_counts))
    load.metadata["counts"] = counts
    load.warnings.extend(count_warnings(load.name, counts, documented))


def select_cohort(load: DatasetLoad, cohort: str | None = None) -> DatasetLoad:
    """Keep the records of ``cohort`` (the reader's default cohort if None); records it in metadata."""
    spec = reader(load.name).spec
    cohort = cohort or spec.default_cohort
    if cohort not in spec.cohorts:
        raise FocusError(f"unknown cohort {cohort!r} for {load.name}; known cohorts: {', '.join(spec.cohorts)}")
    keep = spec.cohorts[cohort]
    before = len(load.records)
    load.records = [r for r in load.records if keep(r)]
    load.metadata["cohort"] = cohort
    load.metadata["cohort_excluded"] = before - len(load.records)
    return load


def assign_splits(load: DatasetLoad, split_file: str | os.PathLike | None = None,
                  seed: int = splits.DEFAULT_SEED) -> DatasetLoad:
    """Assign splits per the split policy: an external file if given, else the official split (with a carved
    val part where it has none), else the grouped stratified 60/20/20 split."""
    load.metadata["seed"] = seed
    if split_file is not None:
        _apply_file(load, Path(split_file))
    elif reader(load.name).spec.official_split:
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
    """Images per split."""
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
    load.metadata["group_key"] = reader(name).spec.group_key
    load.metadata["splits"] = split_counts(load)
    return load
