"""Everything a run needs, checked before anything is loaded or written: the model preset, every task pattern,
the dataset folders the tasks read (and the columns a dataset card names), the weights (in the local cache, or
the hub reachable), the output folder, the ``--log-to`` trackers and the device. All problems are collected and reported together, each with what to do about it; ``focus-eval
run --check`` stops here and prints the units the run would compute."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from focus_eval.errors import FocusError

NO_DATA_ROOT = ("no data root: pass --data-root DIR (or set FOCUS_DATA) - the folder holding one sub-folder per "
                "dataset (user datasets may also be given with --dataset-path NAME=DIR)")
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")


@dataclass
class Preflight:
    """What a run would do, and what stops it: the preset, the tasks, the units (task x method), per task the
    reason no method scores it, per (task, method) the task's reason to skip it, and the problems."""

    preset: Any = None
    tasks: list = field(default_factory=list)
    units: list = field(default_factory=list)
    unserved: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    missing: set[str] = field(default_factory=set)  # datasets whose folder is not there
    counts: dict[str, dict[str, int]] = field(default_factory=dict)  # task -> split -> images (split_counts)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # options given that apply to none of the run's methods

    def raise_problems(self) -> None:
        """A FocusError listing every problem (exit status 2), when there is one."""
        if not self.problems:
            return
        if len(self.problems) == 1:  # one problem is one line, as every other error of the command line
            raise FocusError(f"{self.problems[0]} (nothing was run or written)")
        listed = "\n".join(f"  {i}. {p}" for i, p in enumerate(self.problems, 1))
        raise FocusError(f"the run cannot start ({len(self.problems)} problems); nothing was run or written:\n"
                         f"{listed}")


def preflight(options) -> Preflight:
    """Check ``options`` (RunOptions) without loading any model or image; never raises for a problem it
    knows (``Preflight.raise_problems`` does)."""
    check = Preflight()
    check.preset = _attempt(check, _load_preset, options)
    check.tasks = _attempt(check, _expand_tasks, options) or []
    if check.preset is not None and check.tasks:
        _attempt(check, _plan, check, options)
    _check_data(check, options)
    _check_cards(check)
    if check.preset is not None:
        # the trust gate first: locating a preset's weights may import the package a field names
        problem = code_problem(check.preset, options.trust_remote_code) or weights_problem(check.preset)
        check.problems += [problem] if problem else []
    problem = output_problem(Path(options.output_path))
    check.problems += [problem] if problem else []
    if options.log_to:
        from focus_eval.runner.tracker_checks import target_problems

        check.problems += target_problems(list(options.log_to), Path(options.output_path))
    _attempt(check, check_device, options.device)
    return check


def _attempt(check: Preflight, fn, *args):
    try:
        return fn(*args)
    except FocusError as exc:
        check.problems.append(str(exc))
        return None


def _load_preset(options):
    from focus_eval.presets import load_preset

    return load_preset(options.model, dict(options.model_args), options.models_path)


def _expand_tasks(options) -> list:
    """The tasks of every comma-separated item of ``--tasks``, each item checked on its own so that every
    unknown name is reported."""
    from focus_eval.task import TaskIndex

    index = TaskIndex(include_paths=[Path(p) for p in options.include_path])
    names: dict[str, None] = {}
    unknown = []
    items = [i.strip() for i in str(options.tasks).split(",") if i.strip()]
    for item in items:
        try:
            names.update(dict.fromkeys(index.expand(item, include_proxy=True)))
        except FocusError as exc:
            unknown.append(str(exc))
    if unknown:
        raise FocusError("; ".join(unknown))
    from focus_eval.runner.run import with_variants

    return with_variants([index.get(n) for n in index.expand(items, include_proxy=options.include_proxy)], options)


def _plan(check: Preflight, options) -> None:
    from focus_eval.runner.run import option_notes, plan_units, select_methods

    names = options.methods or list(check.preset.methods)
    methods = select_methods(check.preset, names)
    check.units, check.unserved, check.skipped = plan_units(check.tasks, check.preset, methods, names)
    check.notes = option_notes(options, methods.values())


def _check_data(check: Preflight, options) -> None:
    """A data root, and under it (or where it was registered) the folder of every dataset the tasks read."""
    from focus_eval.data.registry import check_name, dataset_folder, dataset_present

    if options.data_root is None:
        check.problems.append(NO_DATA_ROOT)
        return
    root = Path(options.data_root)
    if not root.is_dir():
        check.problems.append(f"data root {root} is not a folder: pass --data-root DIR (or set FOCUS_DATA) to "
                              f"the folder holding one sub-folder per dataset")
        return
    for name in dict.fromkeys(t.dataset for t in check.tasks):
        try:
            check_name(name)
            present = dataset_present(root, name)
            folder = dataset_folder(root, name)
        except FocusError as exc:
            check.problems.append(f"dataset {name!r}: {exc}; register it with --dataset-path NAME=DIR "
                                  f"(a folder with a dataset.yaml card)")
            continue
        if not present:
            check.missing.add(name)
            check.problems.append(f"dataset {name}: folder {folder} not found; extract the {name} archive into "
                                  f"it (README 'Datasets'), or leave {name}'s tasks out of --tasks")


def code_problem(preset, trust_remote_code: bool) -> str | None:
    """Why the preset may not run without ``--trust-remote-code`` (a field that names code focus-eval does
    not ship: ``adapters.check_code``); None when it may."""
    from focus_eval.adapters import check_code

    try:
        check_code(preset, trust_remote_code)
    except FocusError as exc:
        return str(exc)
    return None


def _check_cards(check: Preflight) -> None:
    """Every column the card of a user dataset names (its targets' label columns above all) is in its manifest
    or dataset, read from its header or features alone."""
    from focus_eval.data.manifests import manifest_cards
    from focus_eval.data.readers.manifest import card_columns, card_headers

    cards = {card.name: card for card in manifest_cards()}
    for name in dict.fromkeys(t.dataset for t in check.tasks):
        if name in cards and name not in check.missing:
            try:
                card_columns(cards[name], card_headers(cards[name]))
            except FocusError as exc:
                check.problems.append(f"dataset {name}: {exc} (card {cards[name].path})")


def weights_problem(preset) -> str | None:
    """Where the preset's weights come from, checked without loading them: a tiny model (built here), a
    packaged file (its package installed), a local file or folder (it exists), a hub repository (in the local
    cache, or the hub reachable; offline mode on and not cached is a problem). An adapter registered from
    outside says itself what its ``source`` means, so its presets are left to it."""
    from focus_eval.adapters import hub
    from focus_eval.adapters.builtin import BUILTIN_ADAPTERS

    if preset.adapter not in BUILTIN_ADAPTERS:
        return None

    if preset.weights:
        path = Path(str(preset.weights)).expanduser()
        return None if path.is_file() else (f"model {preset.name!r}: weights file {path} does not exist; pass "
                                            f"--model-args weights=PATH to the checkpoint")
    source = str(preset.source or "")
    if not source or source.startswith("tiny:"):
        return None
    if source.startswith("package:"):
        from focus_eval.adapters.checkpoints import packaged_file

        try:
            packaged_file(preset, source[len("package:"):])
        except FocusError as exc:
            return str(exc)
        return None
    if Path(source).expanduser().is_dir():
        return None
    if not _HUB_ID.match(source):
        return (f"model {preset.name!r}: source folder {source} does not exist; pass --model-args source=DIR "
                f"(a local copy of the model)")
    if hub.cached(source, preset.revision or None) is not None:
        return None
    if hub.offline():
        return f"model {preset.name!r}: {hub.offline_missing(source)}"
    reason = hub.unreachable()
    if reason is None:
        return None  # not cached yet: the run downloads it
    return (f"model {preset.name!r}: {source} is not in the cache at {hub.cache_folder()} and the model hub "
            f"{hub.endpoint()} cannot be reached ({reason}). {hub.advice(source, bool(preset.gated))}")


def output_problem(path: Path) -> str | None:
    """The output folder (or the nearest folder above it that exists) must be a folder this user can write."""
    path = path.expanduser().resolve()
    if path.exists() and not path.is_dir():
        return f"output path {path} is a file, not a folder; pass --output-path DIR"
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        why = "is on a read-only file system" if _read_only(existing) else "is not writable by this user"
        return (f"output folder {path} cannot be written ({existing} {why}); pass --output-path DIR (a folder "
                f"you can write) or set FOCUS_OUTPUT")
    return None


def _read_only(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def check_device(device: str | None) -> None:
    """A device spelled as torch spells it (``focus_eval.validators.device``), and a GPU asked for visible: a run
    never falls back to the CPU silently."""
    import argparse

    from focus_eval.validators import device as parse_device

    try:
        device = parse_device(device) if device is not None else None
    except argparse.ArgumentTypeError as exc:
        raise FocusError(f"--device: {exc}") from None
    if device == "mps":
        import torch

        if not torch.backends.mps.is_available():
            raise FocusError("--device mps: torch sees no Apple GPU (MPS) here; pass --device cpu to run on the "
                             "CPU, or omit --device to use what there is")
    if not device or not device.startswith("cuda"):
        return
    import torch

    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    index = device.partition(":")[2]
    if not visible or (index.isdigit() and int(index) >= visible):
        shown = os.environ.get("CUDA_VISIBLE_DEVICES")
        raise FocusError(f"--device {device}: {visible} GPU(s) visible to torch"
                         f"{f' (CUDA_VISIBLE_DEVICES={shown})' if shown is not None else ''}; "
                         f"pass --device cpu to run on the CPU, or omit --device to use a GPU when there is one")


def chosen_device(device: str | None) -> str:
    """The kind of device a run with ``--device`` ``device`` uses (cpu, cuda or mps), as the runner's process
    state picks it: auto is a GPU when torch sees one, else the CPU."""
    if device:
        return device.partition(":")[0]
    import torch

    if torch.cuda.is_available():
        return "cuda"
    return "mps" if torch.backends.mps.is_available() else "cpu"


def split_counts(check: Preflight, options) -> dict[str, dict[str, int]]:
    """Per task, its labelled images per split, where its dataset's folder is there (label files only, no image
    is opened); a dataset that cannot be read is a problem added to ``check``."""
    from focus_eval.data.registry import load_dataset

    loads: dict[tuple[str, str | None], Any] = {}
    counts: dict[str, dict[str, int]] = {}
    for task in dict.fromkeys(u.task for u in check.units):
        key = (task.dataset, task.cohort)
        if options.data_root is None or task.dataset in check.missing:
            continue
        if key not in loads:
            try:
                loads[key] = load_dataset(task.dataset, options.data_root, cohort=task.cohort,
                                          split_file=options.split_files.get(task.dataset))
            except FocusError as exc:
                loads[key] = None
                check.problems.append(f"dataset {task.dataset}: {exc}")
        if loads[key] is not None:
            counts[task.name] = {split: len(task.records(loads[key], split)) for split in ("train", "val", "test")}
    return counts
