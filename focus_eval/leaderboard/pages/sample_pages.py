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


def sample_links(entries: Iterable[Entry], task_slugs: dict[str, str], model_slugs: dict[str, str]) -> dict:
    """Results-line key -> site path of its sample page, for binary lines whose sample file is at hand."""
    chosen = [e for e in entries if e.raw.get("output_type") in (None, "binary") and _file(e) is not None]
    names = {e.key: ".".join(part for part in (model_slugs[e.model], e.line.method, e.line.adapter,
                                                e.convention_text) if part) for e in chosen}
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
                test_rows: list[dict] | None = None) -> SamplePage:
    """The page of one results line: every test row of its sample file, in file order (``test_rows`` when the
    build has read them already)."""
    rows = []
    for row in read_test_rows(_file(entry)) if test_rows is None else test_rows:
        image_id = str(row.get("image_id"))
        rows.append(SampleRow(
            image_id=image_id, patient_id=row.get("patient_id"), score=row.get("score"), text=row.get("text"),
            label=row.get("label"), pred=row.get("pred"), age=row.get("age"), sex=row.get("sex"),
            quality=row.get("quality"), error=row.get("error"), cell=cell_of(row.get("label"), row.get("pred")),
            thumb=(thumbs or {}).get((entry.line.dataset or "", image_id))))
    counts = {key: sum(r.cell == key for r in rows) for key, _ in CELLS}
    return SamplePage(entry=entry, path=path, rows=rows, counts=counts,
                      has_text=any(r.text is not None for r in rows), has_thumbs=any(r.thumb for r in rows))


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
        answer = f"<td>{EM_DASH if r.text is None else _escape(r.text)}</td>" if page.has_text else ""
        out.append(
            f'<tr data-cell="{_escape(r.cell)}">\n'
            f'  <th scope="row" class="first" data-value="{_escape(r.image_id)}">{thumb}<code>{_escape(r.image_id)}'
            f"</code></th>\n  {value_cell(r.score)}\n  {answer}\n"
            f'  <td class="num">{number(r.label)}</td>\n  <td class="num">{number(r.pred)}</td>\n'
            f'  <td class="num">{number(r.age)}</td>\n  <td>{text(r.sex)}</td>\n  <td>{text(r.quality)}</td>\n'
            f"  <td><code>{text(r.patient_id)}</code></td>\n  <td>{text(r.error)}</td>\n</tr>")
    return Markup("\n".join(out))
