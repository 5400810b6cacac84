"""The pooled FunBench L1 set: the images of every dataset FunBench draws its modality questions from (the
paper's Table 1 gives "all datasets" for L1; its 14 sources, ``MEMBERS``), read as one dataset so that one L1b
task asks over colour fundus, OCT and ultra-wide-field images together, as the paper's single L1b set does.

It reads no folder of its own: its folder is the data root, and each member present under it is loaded as on its
own (``registry.load_dataset``: its default cohort, its own split policy and seed), then prefixed with its name:
image ``<member>/<image id>``, patient ``<member>/<patient id>``; the record keeps its member's split, so the
pool's test split is the union of the members' test splits (FunBench takes each dataset's test split). Members
absent from the data root are named in a warning; none present is an error. TOP is FunBench's one source of
ultra-wide-field images only; DeepDRiD adds its UWF part.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from focus_eval.data.records import DatasetLoad
from focus_eval.data.spec import ReaderSpec
from focus_eval.errors import DataError

# FunBench's L1 sources as focus-eval reads them (IDRiD: its disease-grading part)
MEMBERS = ("idrid", "ddr", "jsiec", "rfmid", "oia_odir", "retinal_lesions", "octdl", "neh", "octid", "oct2017",
           "retouch", "mmc_amd", "deepdrid", "top")

SPEC = ReaderSpec(
    name="funbench_pool",
    targets=(),
    group_key="the member dataset's own group (prefixed with the member's name)",
    official_split=True,
    folder=".",
    label_rules={"modality": "each member's record modality (cfp, oct, uwf) as its reader sets it"},
)


def read(folder: Path) -> DatasetLoad:
    from focus_eval.data.registry import dataset_present, load_dataset

    root = Path(folder).resolve()
    load = SPEC.new_load(root)
    present = [m for m in MEMBERS if dataset_present(root, m)]
    if not present:
        raise DataError(f"none of the pooled FunBench datasets is under {root} ({', '.join(MEMBERS)})",
                        file=str(root))
    for member in present:
        part = load_dataset(member, root)
        for r in part.records:
            load.records.append(replace(r, image_id=f"{member}/{r.image_id}", patient_id=f"{member}/{r.patient_id}",
                                        relpath=r.path.resolve().relative_to(root).as_posix(),
                                        extra={**r.extra, "member": member}))
        load.warnings += [f"{member}: {w}" for w in part.warnings]
        load.skipped += part.skipped
    absent = [m for m in MEMBERS if m not in present]
    if absent:
        load.warnings.append(f"pooled datasets not under the data root, left out: {', '.join(absent)}")
    return SPEC.finish_load(load, None, members=present)
