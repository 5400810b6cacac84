"""Per-image pages: the test rows of one results line's sample file (a task with one configuration), with the
confusion matrix at the hard label the results line was computed from, and optional thumbnails.

No sample page is built with ``--no-samples``: image and patient ids stay out of the site."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from markupsafe import Markup

from focus_eval.leaderboard.draw.calibration import read_test_rows, samples_path
from focus_eval.leaderboard.draw.slugs import assign_slugs
from focus_eval.leaderboard.draw.templates import EM_DASH, value_cell
from focus_eval.results.collect import Entry

# Confusion-matrix cells of a row: true/false positive/negative at the line's hard label, or no hard label.
CELLS = (("tp", "true positive"), ("fn", "false negative"), ("fp", "false positive"), ("tn", "true negative"),
         ("none", "no hard label"))
THUMB_SIZE = 96


@dataclass(frozen=True)
class SampleRow:
    """One test image of a sample file as the page shows it."""

    image_id: str
    patient_id: str | None
    score: float | None
    text: str | None
    label: object
    pred: object
    age: float | None
    sex: str | None
    quality: str | None
    error: str | None
    cell: str
    thumb: str | None = None
    prompt: str | None = None  # what the model was asked about this image (prompt methods)


@dataclass(frozen=True)
class SamplePage:
    """The sample page of one results line."""

    entry: Entry
    path: str
    rows: list[SampleRow]
    counts: dict[str, int] = field(default_factory=dict)
    # whether any row has an answer text or a thumbnail (the page's optional columns), worked out once
    has_text: bool = False
    has_thumbs: bool = False
    # the prompt every image was asked, when they were all asked the same (else each row has its own), and
    # whether the task file has changed since the run (the prompt shown is then the current file's)
    prompt: str | None = None
    prompt_changed: bool = False

    @property
    def csv_path(self) -> str:
        """Site path of the page's rows as CSV, beside the page."""
        return self.path[: -len(".html")] + ".csv"

    @property
    def row_prompts(self) -> bool:
        """Whether the prompt differs between images (a column of its own)."""
        return self.prompt is None and any(r.prompt is not None for r in self.rows)


def sample_links(entries: Iterable[Entry], task_slugs: dict[str, str], model_slugs: dict[str, str]) -> dict:
    """Results-line key -> site path of its sample page, for binary lines whose sample file is at hand."""
    chosen = [e for e in entries if e.raw.get("output_type") in (None, "binary") and _file(e) is not None]
    names = {e.key: ".".join(part for part in (model_slugs[e.model], e.line.method, e.line.adapter,
                                                e.convention_text, e.submitter) if part) for e in chosen}
    stems = assign_slugs(names.values())
    return {e.key: f"samples/{task_slugs[e.line.task]}/{stems[names[e.key]]}.html" for e in chosen}


def _file(entry: Entry) -> Path | None:
    path = samples_path(entry.sample_dir, entry.line.task, entry.line.method)
    return path if path is not None and path.is_file() else None


def cell_of(label: object, pred: object) -> str:
    """The confusion-matrix cell of a binary row."""
    if pred not in (0, 1) or label not in (0, 1):
        return "none"
    return ("tp" if label else "fp") if pred else ("fn" if label else "tn")


def sample_page(entry: Entry, path: str, thumbs: dict[tuple[str, str], str] | None = None,
                test_rows: list[dict] | None = None, asked: AskedTask | None = None) -> SamplePage:
    """The page of one results line: every test row of its sample file, in file order (``test_rows`` when the
    build has read them already), with the prompt each image was asked where ``asked`` gives the task."""
    rows = []
    for row in read_test_rows(_file(entry)) if test_rows is None else test_rows:
        image_id = str(row.get("image_id"))
        rows.append(SampleRow(
            image_id=image_id, patient_id=row.get("patient_id"), score=row.get("score"), text=row.get("text"),
            label=row.get("label"), pred=row.get("pred"), age=row.get("age"), sex=row.get("sex"),
            quality=row.get("quality"), error=row.get("error"), cell=cell_of(row.get("label"), row.get("pred")),
            thumb=(thumbs or {}).get((entry.line.dataset or "", image_id)),
            prompt=asked.prompt(row) if asked is not None else None))
    counts = {key: sum(r.cell == key for r in rows) for key, _ in CELLS}
    prompts = {r.prompt for r in rows}
    return SamplePage(entry=entry, path=path, rows=rows, counts=counts,
                      has_text=any(r.text is not None for r in rows), has_thumbs=any(r.thumb for r in rows),
                      prompt=prompts.pop() if len(prompts) == 1 else None,
                      prompt_changed=asked is not None and asked.changed)


@dataclass(frozen=True)
class AskedTask:
    """The task a prompt line asked, as the task index reads it now, and whether its hash differs from the one the
    line was computed with."""

    task: object
    changed: bool

    def prompt(self, row: dict) -> str:
        """The prompt of one sample row: the task's template with the row's own age and sex (the only image
        fields a prompt can read)."""
        from types import SimpleNamespace

        return self.task.render_prompt(SimpleNamespace(age=row.get("age"), sex=row.get("sex")))


PROMPT_METHOD = "prompt"  # the method that asks a task's own prompt (task.render_prompt) of each image


def asked_tasks(entries: Iterable[Entry], index) -> dict[tuple, AskedTask]:
    """Results-line key -> the task its images were asked, for the prompt method's lines whose task (or the task
    its variant was made from) the task index knows."""
    from focus_eval.task.variants import DEFAULT, variant_task

    out = {}
    for entry in entries:
        if entry.line.method != PROMPT_METHOD:
            continue
        extra = entry.line.extra or {}
        base = str(extra.get("base_task") or entry.line.task)
        if base not in index.names:
            continue
        task, variant = index.get(base), extra.get("prompt_variant")
        if variant not in (None, DEFAULT):
            if variant not in task.prompt_variants:
                continue
            task = variant_task(task, variant)
        # other fragility copies (corruptions, label rules, budgets) ask the task's own prompt; their hashes differ
        checked = variant is not None or base == entry.line.task
        out[entry.key] = AskedTask(task, checked and bool(entry.line.task_hash) and entry.line.task_hash != task.hash)
    return out


SAMPLE_COLUMNS = ("image_id", "patient_id", "score", "label", "pred", "cell", "age", "sex", "quality", "error",
                  "answer", "prompt")


def rows_csv(page: SamplePage) -> str:
    """The page's rows as CSV (``SampleRow`` fields, the confusion-matrix cell, the answer and the prompt asked)."""
    from focus_eval.leaderboard.draw.csvdata import CsvTable

    table = CsvTable(SAMPLE_COLUMNS)
    for r in page.rows:
        table.add(r.image_id, r.patient_id, r.score, r.label, r.pred, r.cell, r.age, r.sex, r.quality, r.error,
                  r.text, r.prompt)
    return table.to_csv()


def thumbnail_name(dataset: str, image_id: str) -> str:
    """Site path of an image's thumbnail: the ids are hashed, so no id becomes a file name."""
    digest = hashlib.sha256(f"{dataset}\0{image_id}".encode("utf-8")).hexdigest()[:20]
    return f"thumbs/{digest}.jpg"


def make_thumbnails(entries: Iterable[Entry], data_root: Path) -> dict[tuple[str, str], tuple[str, bytes]]:
    """(dataset, image id) -> (site path, JPEG bytes) for the test images of the given lines' sample files,
    decoded from the datasets under ``data_root`` as the runner reads them; ids the dataset lacks get none."""
    import io

    from focus_eval.data.images import open_image
    from focus_eval.data.registry import load_dataset

    wanted: dict[str, set[str]] = {}
    for entry in entries:
        ids = wanted.setdefault(entry.line.dataset or "", set())
        ids.update(str(r.get("image_id")) for r in read_test_rows(_file(entry)))
    out: dict[tuple[str, str], tuple[str, bytes]] = {}
    for dataset, ids in sorted(wanted.items()):
        records = {r.image_id: r.path for r in load_dataset(dataset, data_root).records if r.image_id in ids}
        for image_id, path in sorted(records.items()):
            image = open_image(path, draft=THUMB_SIZE)
            image.thumbnail((THUMB_SIZE, THUMB_SIZE))
            buffer = io.BytesIO()
            image.save(buffer, format="JPEG", quality=80)
            out[(dataset, image_id)] = (thumbnail_name(dataset, image_id), buffer.getvalue())
    return out


# markupsafe's escapes, written as one translation table (a Markup object per cell cost more than the page)
_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "'": "&#39;", '"': "&#34;"})


def _escape(value: object) -> str:
    return str(value).translate(_ESCAPES)


def _answer(text: str | None) -> str:
    """An answer as its cell shows it: a dash for none, a visible mark for one of blanks only (the CSV has it as
    written)."""
    if text is None:
        return EM_DASH
    return _escape(text) if text.strip() else '<span class="muted">(blank)</span>'


def rows_html(page: SamplePage, root: str) -> Markup:
    """The table rows of a sample page, written here rather than in the template: a grid of a thousand lines
    has a hundred thousand rows, and a template call per row took most of the site's build time."""
    def text(value: object) -> str:
        return EM_DASH if value is None or value == "" else _escape(value)

    def number(value: object) -> str:
        return EM_DASH if value is None else _escape(value)

    out = []
    for r in page.rows:
        thumb = (f'<img class="thumb" src="{_escape(root)}{_escape(r.thumb)}" alt="" width="48" height="48" '
                 f'loading="lazy"> ' if r.thumb else "")
        answer = f"<td>{_answer(r.text)}</td>" if page.has_text else ""
        if page.row_prompts:
            answer = f'<td class="prompt">{text(r.prompt)}</td>\n  {answer}'
        out.append(
            f'<tr data-cell="{_escape(r.cell)}">\n'
            f'  <th scope="row" class="first" data-value="{_escape(r.image_id)}">{thumb}<code>{_escape(r.image_id)}'
            f"</code></th>\n  {value_cell(r.score)}\n  {answer}\n"
            f'  <td class="num">{number(r.label)}</td>\n  <td class="num">{number(r.pred)}</td>\n'
            f'  <td class="num">{number(r.age)}</td>\n  <td>{text(r.sex)}</td>\n  <td>{text(r.quality)}</td>\n'
            f"  <td><code>{text(r.patient_id)}</code></td>\n  <td>{text(r.error)}</td>\n</tr>")
    return Markup("\n".join(out))
