"""A user dataset named like a shipped group or task would lose its own group (the name already means
something else): it is an error naming both."""

from __future__ import annotations

import pytest

from focus_eval.cli import main
from focus_eval.data.manifests import register_manifests
from focus_eval.errors import FocusError
from focus_eval.task import TaskIndex
from helpers.open_fixtures import CARD, clean_cards, write_clinic  # noqa: F401

pytestmark = pytest.mark.usefixtures("clean_cards")


@pytest.mark.parametrize("name,kind", [("dr", "group"), ("glaucoma", "group"), ("dr_brset", "task")])
def test_a_card_named_like_a_shipped_group_or_task_is_an_error(name, kind, tmp_path):
    folder = write_clinic(tmp_path / "clinic", card=f"name: {name}\n" + CARD.format(manifest="manifest.csv"))
    register_manifests(None, [f"{name}={folder}"])
    with pytest.raises(FocusError, match=rf"the dataset name '{name}' is also the {kind} '{name}'"):
        TaskIndex()


def test_the_tasks_command_reports_the_clash(tmp_path, capsys):
    folder = write_clinic(tmp_path / "clinic", card="name: dr\n" + CARD.format(manifest="manifest.csv"))
    assert main(["tasks", "dr", "--data-root", str(tmp_path), "--dataset-path", f"dr={folder}"]) == 2
    assert "the dataset name 'dr' is also the group 'dr'" in capsys.readouterr().err


def test_a_card_with_its_own_name_keeps_its_group(tmp_path):
    folder = write_clinic(tmp_path / "clinic")
    register_manifests(None, [f"clinic={folder}"])
    assert TaskIndex().expand("clinic") == ["dr_clinic", "referable_dr_clinic", "glaucoma_clinic"]
