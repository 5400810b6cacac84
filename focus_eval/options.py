"""The run options, declared once: ``RunOptions`` and, per field, its command-line spellings (lm-eval's
included), help text, parser, choices, environment default, and whether it changes a unit's numbers.

The ``focus-eval run`` options, the keyword check of ``focus_eval.evaluate``, ``--config`` files, the options
recorded in each run manifest, the grid's plan settings and job command lines, and the options ``focus-eval
sft`` shares with runs are all read from this one declaration. It imports nothing above the lowest layer, so
that the leaderboard can read the defaults without importing the runner."""

from __future__ import annotations

import argparse
import os
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable

from focus_eval import validators
from focus_eval.errors import FocusError
from focus_eval.registry import suggest

VALUE, ON, OFF, TOGGLE, APPEND, RECORD = "value", "on", "off", "toggle", "append", "record"


@dataclass(frozen=True)
class Option:
    """How one run option is given. ``kind``: ``value`` (``--flag VALUE``), ``on`` (a flag that sets True),
    ``off`` (a flag that sets False, e.g. ``--no-prepared``), ``toggle`` (``--resume`` / ``--no-resume``),
    ``append`` (a repeatable flag), ``record`` (not an option: recorded by the run itself)."""

    flags: tuple[str, ...] = ()
    help: str = ""
    kind: str = VALUE
    aliases: tuple[str, ...] = ()  # lm-eval's spellings
    negative: tuple[str, ...] = ()  # a toggle's off flag
    negative_help: str = ""
    parse: Callable[[str], Any] | None = None  # command-line text -> value (argparse's type)
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    env: str | None = None  # environment variable whose value is the default
    numbers: bool = False  # changes a unit's numbers (part of its fingerprint)
    fingerprint: str | None = None  # the fingerprint key when it is not the option's name
    path: bool = False  # a file or folder (its items, for a list): made absolute where jobs run elsewhere
    check: Callable[[Any], Any] | None = None  # a value from a file or a keyword -> the field's value
    render: Callable[[Any], list[str]] | None = None  # the field's value -> command-line texts, one per flag
    # the methods whose numbers the option changes (a method class -> bool; None: every method), in words for the
    # note a run gives when it ignores the option for a method; and the key of Task.variant that the task copies
    # the option makes carry (a method it does not apply to does not score those copies)
    applies: Callable[[Any], bool] | None = None
    applies_to: str = ""
    variant: str | None = None


def option(default: Any = MISSING, *, factory: Callable[[], Any] | None = None, **spec: Any) -> Any:
    """A dataclass field carrying its ``Option`` in the field's metadata."""
    meta = {"option": Option(**spec)}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


# --- value parsers (argparse types) and checks ---------------------------------------------------------------
def limit(text: str) -> int | float:
    """--limit: a whole number of images (at least 1), or a fraction of each test set between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value >= 1 and value.is_integer():
        return int(value)
    if 0 < value < 1:
        return value
    raise argparse.ArgumentTypeError(f"expected a number of images (1, 2, ...) or a fraction (0 < f < 1), got {text!r}")


def batch_size(text: str) -> int | str:
    if text == "auto":
        return text
    if text.isdigit() and int(text) > 0:
        return int(text)
    raise argparse.ArgumentTypeError(f"expected a positive number or 'auto', got {text!r}")


def check_split_files(value: Any) -> dict[str, str]:
    """``--split-file DATASET=CSV`` (repeatable), a list of such texts, or a mapping -> {dataset: csv}."""
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    out = {}
    for v in [value] if isinstance(value, str) else value:
        if not isinstance(v, str) or "=" not in v:
            raise FocusError(f"--split-file expects DATASET=CSV, got {v!r}")
        name, path = v.split("=", 1)
        out[name.strip()] = path.strip()
    return out


def check_methods(value: Any) -> list[str] | None:
    """``--methods a,b`` or a list of names (``validators.names``: at least one, none empty)."""
    if value is None:
        return None
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(m, str) for m in items):
        raise ValueError(f"expected names, got {value!r}")
    try:
        return validators.names(",".join(items)).split(",")
    except argparse.ArgumentTypeError as exc:
        raise ValueError(str(exc)) from None


# what the methods an option applies to have in common (a method class: runner/methods/base.py's attributes)
def _fits_probe(method) -> bool:
    return "train" in method.splits


def _reads_prompt(method) -> bool:
    return method.kind == "prompt"


def _reads_images(method) -> bool:
    return getattr(method, "reads_images", True)


def check_model_args(value: Any) -> dict[str, Any] | str:
    """``k=v,...`` (kept as text: the preset loader reads it) or a mapping."""
    if isinstance(value, dict):
        return {str(k): v for k, v in value.items()}
    if isinstance(value, str):
        return value
    raise ValueError(f"expected k=v,... or a mapping, got {value!r}")


def check_tasks(value: Any) -> str:
    if isinstance(value, (list, tuple)) and all(isinstance(t, str) for t in value):
        return ",".join(value)
    if isinstance(value, str):
        return value
    raise ValueError(f"expected task names, got {value!r}")


def _check_log_to(value: Any) -> list[str]:
    """``--log-to mlflow[:URI]`` / ``--log-to wandb`` (repeatable), or a list of such texts; each at most once."""
    items = [value] if isinstance(value, str) else list(value or [])
    for item in items:
        kind, colon, uri = item.partition(":") if isinstance(item, str) else ("", "", "")
        if kind == "wandb" and colon:
            raise FocusError(f"--log-to {item}: W&B takes no URI; write --log-to wandb, with WANDB_BASE_URL for "
                             f"your own W&B server, WANDB_PROJECT for the project and WANDB_MODE=offline to log "
                             f"offline")
        if kind not in ("mlflow", "wandb") or (colon and not uri.strip()):
            raise FocusError(f"--log-to expects mlflow, mlflow:URI (e.g. mlflow:sqlite:///PATH/mlflow.db or "
                             f"mlflow:http://HOST:5000) or wandb, got {item!r}")
    if len({i.partition(":")[0] for i in items}) < len(items):
        raise FocusError(f"--log-to names a tracker twice ({', '.join(items)}); give each of mlflow and wandb once")
    return items


def _render_pairs(value: dict) -> list[str]:
    return [f"{k}={v}" for k, v in value.items()]


# --- the declaration -----------------------------------------------------------------------------------------
@dataclass
class RunOptions:
    """Everything ``focus-eval --model M --tasks T`` was asked to do."""

    model: str = option(
        flags=("--model",),
        help="a preset name ('focus-eval models' lists them), a preset YAML file, or a family adapter "
             "(hf_vision, timm, open_clip, hf_clip, hf_mllm) with --model-args pretrained=HUB_ID_OR_PATH")
    tasks: str = option(
        flags=("--tasks",), check=check_tasks,
        help="comma-separated task names, groups, tags, patterns or task YAML files, e.g. 'glaucoma_*' "
             "or dr,refuge; 'list' lists them")
    model_args: dict[str, Any] = option(
        factory=dict, flags=("--model-args",), aliases=("--model_args",), check=check_model_args, numbers=True,
        fingerprint="preset_hash", render=lambda v: [v] if isinstance(v, str) else [",".join(_render_pairs(v))],
        help="preset overrides k=v,... (e.g. pretrained=ORG/NAME,revision=SHA, weights=PATH, source=DIR)")
    models_path: list[str] = option(
        factory=list, flags=("--models-path",), kind=APPEND, metavar="DIR", path=True,
        help="a folder of user preset YAML files (repeatable; also $FOCUS_MODELS_PATH)")
    dataset_path: list[str] = option(
        factory=list, flags=("--dataset-path",), kind=APPEND, metavar="NAME=DIR",
        help="a user dataset: NAME=DIR with a dataset.yaml card beside its manifest, or a folder of "
             "cards (repeatable; also $FOCUS_DATASETS_PATH); its tasks are <target>_NAME")
    include_path: list[str] = option(
        factory=list, flags=("--include-path",), aliases=("--include_path",), kind=APPEND, path=True,
        help="extra folder of task YAML files")
    include_proxy: bool = option(False, flags=("--include-proxy",), kind=ON,
                                 help="let groups and patterns include proxy tasks")
    data_root: Path | None = option(None, flags=("--data-root",), parse=Path, env="FOCUS_DATA", path=True,
                                    help="folder with one sub-folder per dataset (default: $FOCUS_DATA)")
    output_path: Path = option(Path("results"), flags=("-o", "--output-path"), aliases=("--output_path",),
                               parse=Path, env="FOCUS_OUTPUT", path=True,
                               help="results folder (default: $FOCUS_OUTPUT, else results/)")
    batch_size: int | str = option(
        "auto", flags=("--batch-size",), aliases=("--batch_size",), parse=batch_size,
        help="images per batch, or 'auto' (a large batch, halved when the GPU runs out of memory)")
    device: str | None = option(
        None, flags=("--device",), parse=validators.device, metavar="auto|cpu|cuda|cuda:N|mps",
        help="where the model runs: auto (the default: a GPU when torch sees one, else the CPU), cpu, cuda, "
             "cuda:N or mps")
    seed: int = option(0, flags=("--seed",), parse=validators.seed, numbers=True,
                       help="random seed of the linear probe's search and of the bootstrap")
    limit: int | None = option(
        None, flags=("--limit",), parse=limit, numbers=True,
        help="evaluate at most N test images per task, or a fraction of each test set (e.g. 0.1)")
    resume: bool = option(
        True, flags=("--resume",), negative=("--no-resume",), kind=TOGGLE,
        help="skip finished (task, method) units and continue half-finished ones (default)",
        negative_help="evaluate everything again")
    overwrite: bool = option(
        False, flags=("--overwrite",), kind=ON,
        help="replace results in the output folder that were computed from other inputs (data, labels, task, "
             "preset, options) instead of stopping")
    verify_images: bool = option(
        False, flags=("--verify-images",), kind=ON,
        help="also fingerprint the bytes of every image (resume then notices content changes that keep a "
             "file's size and time)")
    num_workers: int | None = option(None, flags=("--num-workers",), parse=validators.workers,
                                     help="image decoding worker processes")
    probe_compat: bool = option(False, flags=("--probe-compat",), kind=ON, numbers=True,
                                applies=_fits_probe, applies_to="the probes (linear_probe, ve_probe)",
                                help="reference linear probe: L2-normalised features, C = 1, no validation search")
    probe_select: str = option(
        "log_loss", flags=("--probe-select",), choices=("log_loss", "auroc"), numbers=True,
        applies=_fits_probe, applies_to="the probes (linear_probe, ve_probe)",
        help="how the linear probe chooses C on the validation split: log-loss (default, a proper scoring "
             "rule) or AUROC")
    zs_scale: float | None = option(
        None, flags=("--zs-scale",), parse=validators.positive_number, numbers=True,
        applies=lambda method: method.name == "zero_shot", applies_to="zero_shot",
        help="fixed zero-shot logit scale (100 reproduces the reference); default: the model's own")
    adapter: str | None = option(None, flags=("--adapter",), numbers=True, path=True,
                                 help="folder of a peft LoRA adapter to load on the base model")
    trust_remote_code: bool = option(
        False, flags=("--trust-remote-code",), aliases=("--trust_remote_code",), kind=ON,
        help="allow presets that declare remote code, and preset adapters named as module:Class")
    cache_dir: Path | None = option(None, flags=("--cache-dir",), parse=Path, path=True,
                                    help="embedding cache (default: ~/.cache/focus-eval)")
    split_files: dict[str, str] = option(
        factory=dict, flags=("--split-file",), kind=APPEND, metavar="DATASET=CSV", check=check_split_files,
        render=_render_pairs, numbers=True, fingerprint="split_file_sha256",
        help="external split file (image_id, split) for one dataset; repeatable")
    methods: list[str] | None = option(None, flags=("--methods",), parse=validators.names, check=check_methods,
                                       render=lambda v: [",".join(v)],
                                       help="subset of the preset's methods, comma-separated")
    n_boot: int = option(1000, flags=("--n-boot",), parse=validators.n_boot, numbers=True,
                         help="bootstrap resamples for confidence intervals")
    use_prepared: bool = option(True, flags=("--no-prepared",), kind=OFF, numbers=True,
                                help="read raw image files even where a prepared cache exists")
    val_scores: bool = option(
        True, flags=("--no-val-scores",), kind=OFF,
        help="write test rows only: do not also score the validation split of binary tasks (its rows, split "
             "'val', feed the operating-points and recalibration reports; for the prompt method they are extra "
             "model calls)")
    progress: bool = option(True, flags=("--no-progress",), kind=OFF,
                            help="turn the progress bars (and, off a terminal, the per-stage log lines) off")
    check: bool = option(
        False, flags=("--check",), kind=ON,
        help="check the model, tasks, datasets, weights, output folder and device, print the units the run "
             "would compute (with images per split, and the estimated time on a GPU), then stop: nothing is "
             "loaded or written")
    json: bool = option(False, flags=("--json",), kind=ON,
                        help="print the summary (or --check's units) as JSON instead of a table")
    log_to: list[str] = option(
        factory=list, flags=("--log-to",), kind=APPEND, metavar="mlflow[:URI]|wandb", check=_check_log_to,
        help="after each unit is written, log its parameters, metrics with intervals and sample file to MLflow "
             "(at URI, else MLFLOW_TRACKING_URI, else OUTPUT/mlflow.db) or Weights & Biases: one parent run (W&B "
             "group) per command, one experiment (project) per benchmark; checked before the run starts; a "
             "tracker that fails during the run is named in the summary")
    prompt_variants: list[str] | None = option(
        None, flags=("--prompt-variants",), parse=validators.names, check=check_methods,
        render=lambda v: [",".join(v)], applies=_reads_prompt, variant="prompt_variant",
        applies_to="the methods that ask a prompt (prompt, multiple_choice, knowledge_prompt)",
        help="ask each yes/no task once per prompt paraphrase its file declares: 'all' (the task's own prompt, "
             "'default', and every variant) or names, comma-separated; each variant is a task <task>@<name>")
    corruptions: str | None = option(
        None, flags=("--corruptions",), metavar="KIND[:SEVERITY],...", parse=validators.corruptions,
        applies=_reads_images, applies_to="the methods that read images", variant="corruption",
        help="also score every task on corrupted images: blur, jpeg, illumination, exposure, rotation, each at "
             "severity 1-3 (all three when left out), e.g. blur:3,jpeg; each is a task <task>@<kind><severity> "
             "(docs/ROBUSTNESS.md)")
    train_fraction: str | None = option(
        None, flags=("--train-fraction",), metavar="F,...", parse=validators.fractions,
        applies=_fits_probe, applies_to="the probes (linear_probe, ve_probe)", variant="train_fraction",
        help="also fit the probes (linear_probe, ve_probe) on these fractions of the training patients, e.g. "
             "0.01,0.1,0.5,1 (by patient, stratified by label); each is a task <task>@train<F>-s<seed>")
    train_seeds: int = option(1, flags=("--train-seeds",), parse=validators.train_seeds,
                              help="draws of the training patients per --train-fraction (seeds --seed, --seed+1, ...)")
    label_rules: list[str] | None = option(
        None, flags=("--label-rules",), parse=validators.names, check=check_methods, render=lambda v: [",".join(v)],
        help="also score every task under the alternative label rules its file declares: 'all' or names, "
             "comma-separated (e.g. severe: referable DR from severe NPDR); each is a task <task>@<rule>")
    argv: list[str] = option(factory=list, kind=RECORD)

    def __post_init__(self):
        if self.probe_select not in ("log_loss", "auroc"):
            raise FocusError(f"probe_select must be 'log_loss' or 'auroc', got {self.probe_select!r}")
        if self.train_seeds != 1 and not self.train_fraction:
            raise FocusError(f"--train-seeds {self.train_seeds}: the draws are of --train-fraction's training "
                             "patients, and no --train-fraction is given")
        if isinstance(self.seed, int) and isinstance(self.train_seeds, int) and \
                self.seed + self.train_seeds - 1 >= 2 ** 32:
            raise FocusError(f"--seed {self.seed} with --train-seeds {self.train_seeds}: the draws use seeds "
                             f"--seed to --seed + {self.train_seeds - 1}, past the largest seed {2 ** 32 - 1}")


@dataclass(frozen=True)
class Declared:
    """One declared option: its field name, its ``Option`` and its default (a fresh copy each call)."""

    name: str
    spec: Option
    field: Any

    def default(self) -> Any:
        if self.field.default_factory is not MISSING:
            return self.field.default_factory()
        return None if self.field.default is MISSING else self.field.default

    @property
    def required(self) -> bool:
        return self.field.default is MISSING and self.field.default_factory is MISSING

    @property
    def all_flags(self) -> tuple[str, ...]:
        return self.spec.flags + self.spec.negative + self.spec.aliases


def declared(cls: type = RunOptions) -> dict[str, Declared]:
    """The options of ``cls`` (RunOptions, or a dataclass that shares some of its fields), by name."""
    return {f.name: Declared(f.name, f.metadata["option"], f) for f in fields(cls) if "option" in f.metadata}


DECLARED = declared()
# what a run is given (a --config file's keys, the keywords of focus_eval.evaluate); argv is recorded, not given
RUN_OPTIONS = tuple(n for n, d in DECLARED.items() if d.spec.kind != RECORD)
# options that change a unit's numbers under their own name in its fingerprint
FINGERPRINTED = tuple(n for n, d in DECLARED.items() if d.spec.numbers and not d.spec.fingerprint)

# fingerprint key -> what a user changed when it differs
EXPLAIN = {
    "task_hash": "the task file (its prompt, labels rule or settings)",
    "preset_hash": "the model preset or --model-args",
    "method": "the method",
    **{name: DECLARED[name].spec.flags[0] for name in FINGERPRINTED},
    "adapter_digest": "the adapter's weights",
    "prompt_variant": "--prompt-variants (the prompt paraphrase asked)",
    "base_task": "the task a variant was made from",
    "corruption": "--corruptions (the image corruption applied)",
    "train_fraction": "--train-fraction (the share of training patients)",
    "train_seed": "the draw of the training patients (--train-seeds)",
    "label_rule": "--label-rules (the label harmonisation rule)",
    "val_rows": "--no-val-scores (whether the sample file holds validation rows)",
    "split_file_sha256": "--split-file or the split file's contents",
    "split_digest": "the train/val/test assignment",
    "data_fingerprint": "the dataset's label files or images",
    "decode_version": "the image decoding rule (this focus-eval decodes images differently)",
    "images_sha256": "the bytes of the dataset's images (checked with --verify-images)",
}


def cli_default(d: Declared) -> Any:
    """The default a command line starts from: the environment variable's value where one is declared."""
    if d.spec.env and os.environ.get(d.spec.env):
        text = os.environ[d.spec.env]
        return d.spec.parse(text) if d.spec.parse else text
    return d.default()


# --- the command line ----------------------------------------------------------------------------------------
def add_options(parser, names=None, *, cls: type = RunOptions, aliases: bool = True, drop: tuple[str, ...] = (),
                suppress: bool = False, overrides: dict[str, dict[str, Any]] | None = None) -> None:
    """Add the declared options of ``cls`` (those in ``names``, else all) to an argparse parser or group:
    with lm-eval's spellings unless ``aliases`` is false, without the flags in ``drop``, every default
    ``argparse.SUPPRESS`` with ``suppress`` (so that only options given explicitly are set), ``overrides``
    changing a ``default`` or ``help`` by name."""
    for name, d in declared(cls).items():
        if (names is not None and name not in names) or d.spec.kind == RECORD:
            continue
        add_option(parser, d, aliases=aliases, drop=drop, suppress=suppress, **(overrides or {}).get(name, {}))


def add_option(parser, d: Declared, *, aliases: bool = True, drop: tuple[str, ...] = (), suppress: bool = False,
               default: Any = MISSING, help: str | None = None) -> None:
    s = d.spec
    flags = [f for f in s.flags + (s.aliases if aliases else ()) if f not in drop]
    value = cli_default(d) if default is MISSING else default
    if s.kind == APPEND and not isinstance(value, list):
        value = []  # a mapping option (--split-file) collects its texts first
    kw = {"dest": d.name, "help": s.help if help is None else help,
          "default": argparse.SUPPRESS if suppress else value}
    if s.kind in (ON, TOGGLE):
        parser.add_argument(*flags, action="store_true", **kw)
        if s.kind == TOGGLE:
            parser.add_argument(*s.negative, action="store_false", **{**kw, "help": s.negative_help})
    elif s.kind == OFF:
        parser.add_argument(*flags, action="store_false", **kw)
    elif s.kind == APPEND:
        parser.add_argument(*flags, action="append", metavar=s.metavar, **kw)
    else:
        parser.add_argument(*flags, type=s.parse, choices=s.choices, metavar=s.metavar, **kw)


def from_namespace(args: argparse.Namespace, names=None, cls: type = RunOptions) -> dict[str, Any]:
    """The declared options set on ``args`` (parsed by ``add_options``), as the fields hold them."""
    out = {}
    for name, d in declared(cls).items():
        if (names is not None and name not in names) or d.spec.kind == RECORD or not hasattr(args, name):
            continue
        value = getattr(args, name)
        out[name] = d.spec.check(value) if d.spec.check and value is not None else value
    return out


def to_argv(values: dict[str, Any], cls: type = RunOptions) -> list[str]:
    """The command-line arguments that give ``values`` (the inverse of parsing): value options whenever set,
    flags where they differ from the default, one repeated flag per item of a list or mapping."""
    argv: list[str] = []
    for name, d in declared(cls).items():
        value, s = values.get(name), d.spec
        if name not in values or value is None or s.kind == RECORD or value in ({}, []):
            continue
        if s.kind in (ON, OFF, TOGGLE):
            if value != d.default():
                argv.append((s.flags if s.kind != TOGGLE or value else s.negative)[-1])
            continue
        texts = s.render(value) if s.render else [str(v) for v in value] if s.kind == APPEND else [str(value)]
        for text in texts:
            argv += [f"{s.flags[-1]}={text}"] if text.startswith("-") else [s.flags[-1], text]
    return argv


# --- values from files and keywords --------------------------------------------------------------------------
def coerce(d: Declared, value: Any) -> Any:
    """A value from a --config file or a keyword, checked and converted with the command line's parsers."""
    s = d.spec
    if value is None:
        if d.required or d.default() is not None:
            raise ValueError("needs a value")
        return None
    if s.kind in (ON, OFF, TOGGLE):
        if not isinstance(value, bool):
            raise ValueError(f"expected true or false, got {value!r}")
        return value
    if s.check:
        return s.check(value)
    if s.kind == APPEND:
        items = [value] if isinstance(value, (str, os.PathLike)) else value
        if not isinstance(items, (list, tuple)) or not all(isinstance(i, (str, os.PathLike)) for i in items):
            raise ValueError(f"expected a list of texts, got {value!r}")
        return [str(i) for i in items]
    if isinstance(value, bool) or not isinstance(value, (str, int, float, os.PathLike)):
        raise ValueError(f"expected a single value, got {value!r}")
    if s.parse is None:
        if not isinstance(value, (str, os.PathLike)):
            raise ValueError(f"expected a text, got {value!r}")
        value = str(value)
    else:
        try:
            value = s.parse(str(value))
        except (argparse.ArgumentTypeError, ValueError) as exc:
            raise ValueError(str(exc) or f"invalid value {value!r}") from None
    if s.choices and value not in s.choices:
        raise ValueError(f"expected one of {', '.join(s.choices)}, got {value!r}")
    return value


def check_keywords(options: dict[str, Any], known: tuple[str, ...] = RUN_OPTIONS + ("argv",)) -> dict[str, Any]:
    """Keyword options of the Python API: unknown names are an error with a suggestion; values are checked
    as a --config file's are; None stands for the default."""
    out = {}
    for name, value in options.items():
        if name not in known:
            raise FocusError(f"unknown option {name!r}{suggest(name, known)}")
        if value is None and name != "argv" and DECLARED[name].default() is not None:
            continue
        try:
            out[name] = value if name == "argv" else coerce(DECLARED[name], value)
        except (ValueError, FocusError) as exc:
            raise FocusError(f"option {name}: {exc}") from None
    return out


def config_keys() -> dict[str, tuple[str, bool]]:
    """Every key a --config file may use -> (option name, whether a true value turns the option off): the
    field names, their dashed forms, and each flag spelling without its dashes (``no-prepared: true``)."""
    keys: dict[str, tuple[str, bool]] = {}
    for name in RUN_OPTIONS:
        d = DECLARED[name]
        keys[name] = keys[name.replace("_", "-")] = (name, False)
        for flag in d.spec.flags + d.spec.aliases:
            keys.setdefault(flag.lstrip("-"), (name, d.spec.kind == OFF))
        for flag in d.spec.negative:
            keys.setdefault(flag.lstrip("-"), (name, True))
    return keys


def config_values(raw: Any, where: str) -> dict[str, Any]:
    """The options a --config mapping gives, checked with the command line's parsers. Unknown keys and bad
    values are errors naming ``where`` (the file) and the key."""
    if not isinstance(raw, dict):
        raise FocusError(f"{where}: expected a mapping of option names to values")
    keys, out, seen = config_keys(), {}, {}
    for key, value in raw.items():
        found = keys.get(str(key).lstrip("-")) if len(str(key).lstrip("-")) > 1 else None
        if found is None:
            known = sorted(k for k in keys if len(k) > 1)
            raise FocusError(f"{where}: unknown option {key!r}{suggest(str(key), known)}")
        name, off = found
        if name in seen:
            raise FocusError(f"{where}: {key!r} and {seen[name]!r} both set {name}")
        seen[name] = key
        try:
            if off and not isinstance(value, bool):
                raise ValueError(f"expected true or false, got {value!r}")
            out[name] = coerce(DECLARED[name], not value if off else value)
        except (ValueError, FocusError) as exc:
            raise FocusError(f"{where}: {key}: {exc}") from None
    return out


def plain(value: Any) -> Any:
    """A JSON- and YAML-safe copy: paths as text, tuples as lists."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return str(value) if isinstance(value, os.PathLike) else value


def recorded(options: RunOptions) -> dict[str, Any]:
    """The options a run manifest records, in the shape a --config file reads (everything but argv; paths
    absolute, so that the manifest re-runs the same units from any folder)."""
    return absolute_paths({name: plain(getattr(options, name)) for name in RUN_OPTIONS})


def absolute_paths(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with every path option (each item of a list option) made absolute."""
    def absolute(path):
        return str(Path(path).expanduser().resolve())

    out = dict(values)
    for name, value in values.items():
        d = DECLARED.get(name)
        if d is None or not d.spec.path or not value:
            continue
        out[name] = [absolute(v) for v in value] if isinstance(value, list) else absolute(value)
    return out


def shared(name: str, **changes: Any) -> Any:
    """A field of another dataclass that means what the run option ``name`` means (``focus-eval sft``'s
    ``--device``, ``--data-root``, ...), with the run option's declaration; ``default`` may differ."""
    d = DECLARED[name]
    default = changes.pop("default", MISSING)
    spec = replace(d.spec, **changes)
    if default is not MISSING:
        return field(default=default, metadata={"option": spec})
    if d.field.default_factory is not MISSING:
        return field(default_factory=d.field.default_factory, metadata={"option": spec})
    return field(default=d.field.default, metadata={"option": spec})
