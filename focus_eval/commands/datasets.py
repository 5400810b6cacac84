"""``focus-eval datasets check|export|prepare``: inspect the datasets under --data-root, export a harmonized
manifest, or fill the prepared image cache."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import Counter
from pathlib import Path

from focus_eval import validators
from focus_eval.data import registry, splits
from focus_eval.data.records import NAMED_FIELDS, SCALAR_FIELDS, DatasetLoad
from focus_eval.errors import DataError, FocusError

EXPORT_COLUMNS = ("image_id", "patient_id", "split", "dr", "referable_dr", "glaucoma", "age", "sex", "quality", "path")
ROOT_HELP = f"folder holding one sub-folder per dataset (default: ${registry.DATA_ROOT_ENV})"
NAMES_HELP = "registry names; default: every dataset whose folder exists under the data root"
CARD_HELP = ("a user dataset: NAME=DIR holding a dataset.yaml card beside its manifest (CSV or JSONL), or a folder "
             "of cards (repeatable)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    check = actions.add_parser("check", help="report what each dataset folder holds",
                               description="Report, per dataset: found or the expected path, images per split, "
                                           "positives per target and split, metadata coverage, skipped rows, "
                                           "byte-identical images across patients and splits (a test image equal "
                                           "to a training image fails the split check), and the split check. "
                                           "Exit status 1 if any dataset is unusable.")
    check.add_argument("names", nargs="*", metavar="NAME", help=NAMES_HELP)
    check.add_argument("--data-root", help=ROOT_HELP)
    check.add_argument("--dataset-path", action="append", default=[], metavar="NAME=DIR", help=CARD_HELP)
    check.add_argument("--cohort", help="cohort to check (default: each dataset's default cohort)")
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    check.add_argument("--no-content-check", dest="contents", action="store_false",
                       help="do not compare image contents (by default every image file is read once, its content "
                            "digest remembered, to find byte-identical images across patients and splits)")
    export = actions.add_parser("export", help="write a dataset's harmonized records as CSV",
                                description="Write one CSV row per image: " + ", ".join(EXPORT_COLUMNS) +
                                            " (path relative to the dataset folder; empty cell = missing), then "
                                            "one column per FunBench field the records carry: laterality, "
                                            "dr_grade, abnormal, modality, fovea_position, conditions (names "
                                            "joined by ';') and findings.<lesion> (and the lesion geometry "
                                            "fields) per lesion.")
    export.add_argument("name", metavar="NAME")
    export.add_argument("--data-root", help=ROOT_HELP)
    export.add_argument("--dataset-path", action="append", default=[], metavar="NAME=DIR", help=CARD_HELP)
    export.add_argument("-o", "--output", required=True, help="CSV file to write ('-' for standard output)")
    export.add_argument("--cohort", help="cohort (default: the dataset's default cohort)")
    export.add_argument("--split-file", help="CSV with columns image_id, split to use instead of the built-in split")
    export.add_argument("--seed", type=validators.seed, default=splits.DEFAULT_SEED,
                        help="split seed (default: %(default)s)")
    prepare = actions.add_parser("prepare", help="write fundus-cropped, resized copies of the images",
                                 description="Write a fundus-cropped SIZE x SIZE JPEG of every image to "
                                             "DATA_ROOT/.prepared/v<cache format>/NAME/SIZE/"
                                             "<path in the dataset folder>.jpg, for each size asked for, "
                                             "where evaluation runs and sft look first (every method: encoders "
                                             "and multimodal LLMs). Files already prepared from "
                                             "the source as it is now are skipped, stale ones (source changed, "
                                             "copy damaged, an older decoding rule) written again; corrupt files are reported (and "
                                             "listed in corrupt.json) and the run goes on.")
    prepare.add_argument("names", nargs="*", metavar="NAME", help=NAMES_HELP)
    prepare.add_argument("--data-root", help=ROOT_HELP)
    prepare.add_argument("--dataset-path", action="append", default=[], metavar="NAME=DIR", help=CARD_HELP)
    prepare.add_argument("--size", type=validators.image_side, action="append", default=[],
                         help="side of the prepared square images, in pixels (repeatable)")
    prepare.add_argument("--for-models", metavar="PRESETS", action="append", default=[],
                         help="comma-separated model presets (names or YAML files): prepare the size each decodes "
                              "its images at (e.g. 896 for Gemma 3 models, 256 for a 224 crop of a 256 resize)")
    prepare.add_argument("--workers", type=validators.processes, default=None,
                         help="worker processes (default: all CPUs)")


def run(args: argparse.Namespace) -> int:
    from focus_eval.data.manifests import register_manifests

    register_manifests(registry.optional_data_root(args.data_root), args.dataset_path)
    return {"check": run_check, "export": run_export, "prepare": run_prepare}[args.action](args)


def selected_names(names: list[str], root: Path) -> list[str]:
    """The named datasets, or every registry dataset whose folder exists under ``root`` (a pooled dataset such
    as ``funbench_pool`` only when named: it is made of the others)."""
    if names:
        return [registry.check_name(n) for n in names]
    if not root.is_dir():
        raise FocusError(f"data root not found: {root}")
    # a dataset plugin that cannot be imported is left out here and named beneath the listing (run_check)
    found = [n for n, _ in registry.READERS.loaded()
             if n not in registry.POOLED_DATASETS and registry.dataset_present(root, n)]
    if not found:
        raise FocusError(f"no dataset folders under {root}; expected one or more of "
                         f"{', '.join(n + '/' for n in registry.dataset_names())}")
    return found


def check_dataset(name: str, root: Path, cohort: str | None = None, contents: bool = True) -> dict:
    """The check report of one dataset, as a JSON-ready dict; never raises for a bad dataset folder. With
    ``contents``, the images of the cohort are compared by content digest (``data/duplicates.py``)."""
    folder = registry.dataset_folder(root, name)
    report = {"name": name, "folder": str(folder), "found": folder.is_dir(), "usable": False, "error": None}
    if not report["found"]:
        report.update(expected=str(folder), error=f"dataset folder not found; expected {folder}")
        return report
    try:
        load = registry.read_dataset(name, root)
        read_count = len(load.records)
        registry.select_cohort(load, cohort)
        registry.assign_splits(load)
    except FocusError as exc:
        report["error"] = str(exc)
        return report
    try:
        splits.check_splits(load.records, source=f"{name} splits")
        split_check = "ok"
    except DataError as exc:
        split_check = str(exc)
    report.update(_summary(load, read_count), split_check=split_check)
    if contents:
        identical = _identical(load)
        report["identical_images"] = identical.to_dict()
        report["warnings"] += identical.warnings()
        leakage = identical.leakage()
        if leakage and split_check == "ok":
            report["split_check"] = split_check = leakage
    report["usable"] = split_check == "ok" and bool(load.records)
    if not load.records:
        report["error"] = f"no images in cohort {load.metadata.get('cohort')!r}"
    return report


def _identical(load: DatasetLoad):
    from focus_eval.data.duplicates import find_identical
    from focus_eval.progress import bar, on_terminal

    with bar(len(load.records), f"compare contents {load.name}", enabled=on_terminal()) as progress:
        return find_identical(load.records, progress=progress)


def _summary(load: DatasetLoad, read_count: int) -> dict:
    spec = registry.reader(load.name).spec
    meta = load.metadata
    images = {"read": read_count, "cohort": len(load.records), **registry.split_counts(load)}
    positives = {t: {s: {"labelled": sum(1 for r in load.split(s) if r.label(t) is not None),
                         "positive": sum(1 for r in load.split(s) if r.label(t) == 1)} for s in splits.SPLITS}
                 for t in spec.targets}
    coverage = {field: sum(1 for r in load.records if getattr(r, field) is not None)
                for field in ("age", "sex", "quality")}
    reasons = Counter(s.reason.split(":")[0] for s in load.skipped)
    return {"label_file": meta.get("label_file"), "version": meta.get("version"), "cohort": meta.get("cohort"),
            "split_source": meta.get("split_source"), "seed": meta.get("seed"), "group_key": spec.group_key,
            "images": images, "positives": positives, "metadata_present": coverage,
            "label_fields": label_field_counts(load.records),
            "skipped": {"count": len(load.skipped), "reasons": dict(reasons), "rows": [str(s) for s in load.skipped]},
            "warnings": list(load.warnings)}


def label_field_counts(records) -> dict:
    """Images per value of each scalar label field the dataset annotates (laterality, dr_grade, abnormal,
    modality, fovea_position), per finding (annotated, present), per condition, and per lesion the images per
    quadrant, size bin and count bin; fields no image has are left out."""
    from focus_eval.data.records import SCALAR_FIELDS

    out: dict = {}
    for name in SCALAR_FIELDS:
        counts = Counter(str(getattr(r, name)) for r in records if getattr(r, name) is not None)
        if counts:
            out[name] = dict(sorted(counts.items()))
    findings: dict[str, dict[str, int]] = {}
    for r in records:
        for finding, flag in r.findings.items():
            entry = findings.setdefault(finding, {"annotated": 0, "present": 0})
            entry["annotated"] += 1
            entry["present"] += int(flag == 1)
    if findings:
        out["findings"] = dict(sorted(findings.items()))
    conditions = Counter(c for r in records if r.conditions is not None for c in r.conditions)
    if conditions:
        out["conditions"] = dict(sorted(conditions.items()))
    for name in ("lesion_quadrants", "lesion_size", "lesion_count"):
        per_lesion: dict[str, Counter] = {}
        for r in records:
            for lesion, value in getattr(r, name).items():
                values = value if isinstance(value, (list, tuple)) else (value,)
                per_lesion.setdefault(lesion, Counter()).update(str(v) for v in values)
        if per_lesion:
            out[name] = {lesion: dict(sorted(c.items())) for lesion, c in sorted(per_lesion.items())}
    return out


def run_check(args: argparse.Namespace) -> int:
    root = registry.data_root(args.data_root)
    reports = [check_dataset(name, root, args.cohort, getattr(args, "contents", True))
               for name in selected_names(args.names, root)]
    if args.json:
        print(json.dumps({"data_root": str(root), "datasets": reports}, indent=2))
    else:
        from focus_eval.tables import print_table, width

        print_table(CHECK_COLUMNS, [check_row(r) for r in reports], align="llrrrrl")
        print()
        fit = width(sys.stdout)
        for report in reports:
            for line in _check_lines(report):
                print("\n".join(_wrapped(line, fit)))
    from focus_eval.registry import print_unlisted

    print_unlisted("focus_eval.datasets")
    return 0 if all(r["usable"] for r in reports) else 1


CHECK_COLUMNS = ("dataset", "state", "images", "train", "val", "test", "split check")


def check_row(report: dict) -> list:
    """A dataset's line in the table at the top of 'datasets check': what was found, images per split."""
    state = "ok" if report.get("usable") else "NOT FOUND" if not report["found"] else "UNUSABLE"
    images = report.get("images") or {}
    check = report.get("split_check")
    return [report["name"], state, images.get("cohort"), *[images.get(s) for s in splits.SPLITS],
            check if check in (None, "ok") else "failed (below)"]


def _wrapped(line: str, fit: int) -> list[str]:
    """A report line folded at spaces to ``fit`` characters, its continuation indented under it."""
    import textwrap

    if len(line) <= fit:
        return [line]
    indent = " " * (len(line) - len(line.lstrip()) + 4)
    return textwrap.wrap(line, fit, subsequent_indent=indent, break_long_words=True, break_on_hyphens=False)


def _check_lines(report: dict, max_rows: int = 10) -> list[str]:
    name = report["name"]
    if not report["found"]:
        return [f"{name}: NOT FOUND: expected the dataset folder {report['expected']}"]
    if "images" not in report:
        return [f"{name}: UNUSABLE: {report['error']}"]
    images = report["images"]
    lines = [f"{name}: {'ok' if report['usable'] else 'UNUSABLE'} ({report['folder']})",
             f"  label file {report['label_file']} (version {report['version']}); cohort {report['cohort']}: "
             f"{images['cohort']} of {images['read']} images",
             f"  splits ({report['split_source']}, seed {report['seed']}, grouped by {report['group_key']}): "
             + ", ".join(f"{s} {images[s]}" for s in splits.SPLITS) + f"; split check: {report['split_check']}"]
    for target, per_split in report["positives"].items():
        lines.append(f"  {target}: " + ", ".join(
            f"{s} {c['positive']} positive of {c['labelled']}" for s, c in per_split.items()))
    lines.append("  metadata present: " + ", ".join(f"{k} {v}/{images['cohort']}"
                                                   for k, v in report["metadata_present"].items()))
    for field, counts in report["label_fields"].items():
        if field == "findings":
            lines.append("  findings (present of annotated): " + ", ".join(
                f"{k} {c['present']}/{c['annotated']}" for k, c in counts.items()))
        elif field.startswith("lesion_"):
            lines += [f"  {field}.{lesion}: " + ", ".join(f"{k} {v}" for k, v in c.items())
                      for lesion, c in counts.items()]
        else:
            lines.append(f"  {field}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    skipped = report["skipped"]
    if skipped["count"]:
        reasons = ", ".join(f"{k} ({v})" for k, v in skipped["reasons"].items())
        lines.append(f"  skipped {skipped['count']} row(s): {reasons}")
        lines += [f"    {row}" for row in skipped["rows"][:max_rows]]
        if skipped["count"] > max_rows:
            lines.append(f"    ... and {skipped['count'] - max_rows} more (see --json)")
    lines += [f"  warning: {w}" for w in report["warnings"]]
    if report["error"]:
        lines.append(f"  error: {report['error']}")
    return lines


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, (tuple, list)):
        return ";".join(map(str, value))
    return f"{value:g}" if isinstance(value, float) else str(value)


def funbench_cells(record) -> dict[str, str]:
    """The FunBench fields a record carries, one column each: the scalar fields, ``conditions`` and, per name,
    ``findings.<lesion>`` and the lesion geometry fields (None values left out)."""
    cells = {name: _cell(getattr(record, name)) for name in SCALAR_FIELDS if getattr(record, name) is not None}
    if record.conditions is not None:
        cells["conditions"] = _cell(record.conditions) or "none listed"
    for field in NAMED_FIELDS:
        for name, value in sorted((getattr(record, field) or {}).items()):
            if value is not None:
                cells[f"{field}.{name}"] = _cell(value)
    return cells


def export_rows(load: DatasetLoad) -> list[dict[str, str]]:
    """The export CSV rows of a loaded dataset (empty string for a missing value): the FOCUS columns, then one
    column per FunBench field some record carries."""
    return [{"image_id": r.image_id, "patient_id": r.patient_id, "split": _cell(r.split), "dr": _cell(r.dr),
             "referable_dr": _cell(r.referable_dr), "glaucoma": _cell(r.glaucoma), "age": _cell(r.age),
             "sex": _cell(r.sex), "quality": _cell(r.quality), "path": r.relpath, **funbench_cells(r)}
            for r in load.records]


def export_columns(rows: list[dict[str, str]]) -> list[str]:
    """EXPORT_COLUMNS, then the FunBench columns in a fixed order (scalar fields, conditions, named fields)."""
    extra = {k for row in rows for k in row} - set(EXPORT_COLUMNS)
    order = [*SCALAR_FIELDS, "conditions"]
    return [*EXPORT_COLUMNS, *(k for k in order if k in extra), *sorted(k for k in extra if k not in order)]


def run_export(args: argparse.Namespace) -> int:
    load = registry.load_dataset(args.name, registry.data_root(args.data_root), args.cohort, args.split_file, args.seed)
    rows = export_rows(load)
    if not rows:
        # an empty manifest would look like a finished export; it nearly always means a wrong folder
        raise FocusError(f"{args.name}: no images to export from {load.root} (cohort {load.metadata['cohort']}); "
                         + _empty_reason(load))
    if args.output == "-":
        _write_csv(sys.stdout, rows)
    else:
        import io

        from focus_eval.files import atomic_write_text

        buffer = io.StringIO()
        _write_csv(buffer, rows)
        atomic_write_text(args.output, buffer.getvalue())
    where = "standard output" if args.output == "-" else args.output
    print(f"{args.name}: wrote {len(rows)} rows (cohort {load.metadata['cohort']}, split "
          f"{load.metadata['split_source']}) to {where}; {len(load.skipped)} row(s) skipped", file=sys.stderr)
    for warning in load.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def _empty_reason(load: DatasetLoad) -> str:
    if not load.skipped:
        return "the reader found no label rows"
    return f"{len(load.skipped)} row(s) skipped, e.g. {load.skipped[0]}"


def _write_csv(handle, rows: list[dict[str, str]]) -> None:
    writer = csv.DictWriter(handle, fieldnames=export_columns(rows), restval="", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)


def prepare_sizes(sizes: list[int], presets: list[str]) -> list[int]:
    """The sizes asked for with --size and those the --for-models presets decode at, each once, in order."""
    from focus_eval.presets import load_preset
    from focus_eval.runner.images import decode_size

    chosen = list(sizes)
    for name in (n.strip() for spec in presets for n in spec.split(",") if n.strip()):
        preset = load_preset(name, {})
        size = decode_size(preset.preprocessing)
        if size is None:
            print(f"{preset.name}: the preset gives no image size; nothing to prepare for it", file=sys.stderr)
            continue
        chosen.append(size)
    if not chosen:
        raise FocusError("datasets prepare needs --size or --for-models")
    return list(dict.fromkeys(chosen))


def run_prepare(args: argparse.Namespace) -> int:
    from focus_eval.data.prepare import prepare_dataset, prepared_dir

    sizes = prepare_sizes(args.size, args.for_models)
    root = registry.data_root(args.data_root)
    status = 0
    for name in selected_names(args.names, root):
        for size in sizes:
            try:
                report = prepare_dataset(name, root, size, args.workers)
            except FocusError as exc:
                print(f"{name}: error: {exc}", file=sys.stderr)
                status = 1
                break
            stale = (f" ({report.stale} stale: source changed, copy damaged or older decoding rule)" if report.stale
                     else "")
            print(f"{name} {size}px: {report.total} images, {report.written} written{stale}, "
                  f"{report.already_prepared} already prepared, {len(report.corrupt)} corrupt -> "
                  f"{prepared_dir(root, name, size)}")
            for relpath, reason in list(report.corrupt.items())[:10]:
                print(f"  corrupt: {relpath}: {reason}")
            if len(report.corrupt) > 10:
                print(f"  ... and {len(report.corrupt) - 10} more (listed in corrupt.json)")
    return status
