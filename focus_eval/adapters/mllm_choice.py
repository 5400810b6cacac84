"""Reading a multiple-choice answer: the option letters named in the text first, else the option whose text is
closest to the answer by sentence embedding (FunBench's matching of prose answers), else unparsed.

Letters: an answer that is only letters ("B", "b.", "(C)", "A, C" for a multi-answer question), or one that
says so ("The answer is B", "Option C", "Answer: A and D"), or starts with a letter and a separator ("B. right
eye", "C) ..."). A letter outside the offered ones is not read. Prose: the answer (each part between commas,
"and", ";" for a multi-answer question) is matched to the option texts by cosine similarity of all-MiniLM-L6-v2
embeddings; a match needs a similarity of at least MIN_SIMILARITY and a lead of MIN_MARGIN over the next
option, so an answer that names no option stays unparsed. The sample line records the similarity of the best
option and its margin over the second best (``match_similarity``, ``match_margin``; for a multi-answer question
those of its weakest part read), whether or not they cleared the floor. Nothing unparsed is dropped: the
sample line keeps the text, with pred null.

MIN_SIMILARITY = 0.6 was measured with the shipped model on the option texts of every FunBench task
(docs/FUNBENCH.md, "Reading prose answers"): 25 answers that name no option ("tous", "The image is blurry",
"I don't know", "maybe", "image", "none of the above", ...) reach at most 0.584 against the closest option of
any task (0.553 for "The image is blurry", 0.436 for "tous"), while 32 of 39 paraphrases of an option ("the
right eye" 0.940, "a healthy normal fundus" 0.888, "left" 0.588 is the lowest kept) reach 0.6 or more. What
the floor gives up: abbreviations ("severe NPDR" 0.265, "proliferative DR" 0.314) and sentences around a
one-word option ("The fundus appears normal." 0.444 against "normal"), which stay unparsed and show in the
line's coverage. The former floor, 0.3, read "tous" as "myopic fundus" and "The image is blurry" as an option.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

MIN_SIMILARITY = 0.6
MIN_MARGIN = 0.02

_ONLY_LETTERS = re.compile(r"^[\s*_`'\"(\[]*([A-Za-z])[\s*_`'\")\].:]*((?:(?:,|;|/|&|\band\b|\s)+[\s(\[]*[A-Za-z]"
                           r"[\s)\].]*)*)[\s*_`'\".!]*$")
_SAID = re.compile(r"\b(?:answer|option|choice)s?\s*(?:is|are|:|would be|=)?\s*[(\[]?\s*([A-Z])\b"
                   r"((?:\s*(?:,|and|&|/)\s*[(\[]?[A-Z]\b[)\]]?)*)", re.IGNORECASE)
_LEADING = re.compile(r"^[\s*_`'\"(\[]*([A-Z])\s*[.):\]]")
_SPLIT = re.compile(r"\s*(?:,|;|\band\b|\n)\s*", re.IGNORECASE)


@dataclass(frozen=True)
class Reading:
    """What an answer was read as: the letters (None when unparsed), how (``letter``, ``embedding``), and,
    where the embedding match ran, the best option's similarity and its margin over the second best."""

    letters: tuple[str, ...] | None
    decided_by: str | None
    similarity: float | None = None
    margin: float | None = None


@dataclass(frozen=True)
class Match:
    """An embedding match: the options read (None: none cleared the floor and the margin), the similarity of
    the best option and its margin over the second (for several parts, those of the weakest part read, or of
    the closest part when none was read)."""

    indices: tuple[int, ...] | None
    similarity: float | None
    margin: float | None


def _letters_in(match_text: str) -> list[str]:
    return re.findall(r"\b([A-Za-z])\b", match_text)


def parse_letters(text: str | None, offered: Sequence[str], multi: bool) -> tuple[str, ...] | None:
    """The offered letters the answer names (one for a single-answer question), or None."""
    if not text or not text.strip():
        return None
    text = text.strip()
    found: list[str] | None = None
    only = _ONLY_LETTERS.match(text)
    if only and (multi or not only.group(2).strip(" ,;/&")):
        found = [only.group(1)] + _letters_in(only.group(2))
    if found is None:
        said = _SAID.search(text)
        if said:
            found = [said.group(1)] + _letters_in(said.group(2))
    if found is None:
        leading = _LEADING.match(text)
        found = [leading.group(1)] if leading else None
    if found is None:
        return None
    letters = tuple(dict.fromkeys(letter.upper() for letter in found))
    if any(letter not in offered for letter in letters) or (not multi and len(letters) != 1):
        return None
    return tuple(sorted(letters))


def match_scores(text: str | None, options: Sequence[str], multi: bool,
                 embed: Callable[[Sequence[str]], np.ndarray]) -> Match:
    """The options a prose answer names by sentence-embedding similarity, with the similarity and margin."""
    if not text or not re.search(r"[A-Za-z]{2,}", text):
        return Match(None, None, None)
    parts = [p for p in _SPLIT.split(text.strip()) if re.search(r"[A-Za-z]{2,}", p)] if multi else [text.strip()]
    vectors = embed([*options, *parts])
    similarity = vectors[len(options):] @ vectors[:len(options)].T
    chosen, scores = [], []
    for row in similarity:
        order = np.argsort(-row)
        best = float(row[order[0]])
        second = float(row[order[1]]) if len(order) > 1 else -1.0
        read = best >= MIN_SIMILARITY and best - second >= MIN_MARGIN
        if read:
            chosen.append(int(order[0]))
        scores.append((read, best, best - second))
    read_scores = [(b, m) for r, b, m in scores if r]
    best, margin = min(read_scores) if read_scores else max((b, m) for _, b, m in scores)
    return Match(tuple(sorted(set(chosen))) or None, round(best, 4), round(margin, 4))


def match_options(text: str | None, options: Sequence[str], multi: bool,
                  embed: Callable[[Sequence[str]], np.ndarray]) -> tuple[int, ...] | None:
    """Indices of the options a prose answer names by sentence-embedding similarity, or None."""
    return match_scores(text, options, multi, embed).indices


def read_answer(text: str | None, options: Sequence[str], multi: bool,
                embed: Callable[[Sequence[str]], np.ndarray] | None = None) -> Reading:
    """Letters first, then the embedding match (``embed`` defaults to all-MiniLM-L6-v2), else unparsed."""
    letters = [chr(ord("A") + i) for i in range(len(options))]
    found = parse_letters(text, letters, multi)
    if found is not None:
        return Reading(found, "letter")
    if embed is None:
        from focus_eval.adapters.sentence import sentence_encoder

        def embed(texts):
            return sentence_encoder().embed(texts)
    matched = match_scores(text, options, multi, embed)
    if matched.indices is None:
        return Reading(None, None, matched.similarity, matched.margin)
    return Reading(tuple(letters[i] for i in matched.indices), "embedding", matched.similarity, matched.margin)
