"""Which FunBench task codes each mode scores, checked against the dashes of the paper's Table 3."""

import pytest

# Table 3 of the FunBench paper, column by column: True where a mode has a number, False where it has a dash.
CODES = ("l1a", "l1b", "l2a", "l2b", "l3a", "l3b", "l3c", "l3d", "l4a", "l4b", "l4c", "l4d")
TABLE3 = {
    # E-mode I (linear probe on a vision encoder): - - - 0.820 0.373 - - - 0.814 0.175 0.556 0.621 (CLIP-ViT)
    "ve_probe": (False, False, False, True, True, False, False, False, True, True, True, True),
    # E-mode II (knowledge-prompted LLM): - - - 0.560 0.213 - - - - 0.517 0.446 0.401 (Janus-Pro)
    "knowledge_prompt": (False, False, False, True, True, False, False, False, False, True, True, True),
    # E-mode III (holistic): a number in every column
    "multiple_choice": (True,) * 12,
}
# the vision baseline row of E-mode I (DINOv2-large) runs as linear_probe and has the same dashes
TABLE3["linear_probe"] = TABLE3["ve_probe"]


def _funbench_tasks():
    from focus_eval.task import TaskIndex

    index = TaskIndex()
    return [index.get(name) for name in index.expand("funbench_*", include_proxy=True)]


def test_the_transcription_has_the_papers_shape():
    assert all(len(row) == len(CODES) for row in TABLE3.values())
    assert [CODES[i] for i, scored in enumerate(TABLE3["knowledge_prompt"]) if scored] == \
        ["l2b", "l3a", "l4b", "l4c", "l4d"]


@pytest.mark.parametrize("method", sorted(TABLE3))
def test_every_funbench_task_is_skipped_exactly_where_table3_has_a_dash(method):
    tasks = _funbench_tasks()
    assert len({t.name.split("_")[1] for t in tasks}) >= 11
    wrong = []
    for task in tasks:
        scored = TABLE3[method][CODES.index(task.name.split("_")[1])]
        skipped = method in task.skip_methods
        if skipped == scored:
            wrong.append(f"{task.name}: {'skipped' if skipped else 'scored'}")
        elif skipped:
            assert task.skip_methods[method].strip()
    assert not wrong, wrong
