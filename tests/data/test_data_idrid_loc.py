"""IDRiD part C (Localization) reader on miniature copies of its raw layout: centres to fovea position and
laterality row by row, names that restart per split, the shared idrid folder beside part B."""

import pytest
from helpers.raw_layouts import columns, raw_copy, solid

from focus_eval.data.readers import idrid, idrid_loc
from focus_eval.data.registry import dataset_folder, dataset_present, load_dataset, read_dataset
from focus_eval.errors import DataError
from focus_eval.synth import raw_idrid, raw_idrid_loc


# (image_id, split, fovea_position, laterality, image file): a disc right of the fovea is a right eye, whose
# fovea lies on the left of the image.
EXPECTED = [
    ("train/IDRiD_001", "train", "left", "right", "a. Training Set/IDRiD_001.jpg"),
    ("train/IDRiD_002", "train", "right", "left", "a. Training Set/IDRiD_002.jpg"),
    ("train/IDRiD_003", "train", "left", "right", "a. Training Set/IDRiD_003.jpg"),
    ("train/IDRiD_004", "train", None, None, "a. Training Set/IDRiD_004.jpg"),  # no fovea centre
    ("train/IDRiD_005", "train", "left", "right", "a. Training Set/IDRiD_005.jpg"),
    ("train/IDRiD_006", "train", "right", "left", "a. Training Set/IDRiD_006.jpg"),
    ("train/IDRiD_007", "train", "left", "right", "a. Training Set/IDRiD_007.jpg"),
    ("train/IDRiD_008", "train", "right", "left", "a. Training Set/IDRiD_008.jpg"),
    ("train/IDRiD_009", "train", "left", "right", "a. Training Set/IDRiD_009.jpg"),
    ("train/IDRiD_010", "train", "right", "left", "a. Training Set/IDRiD_010.jpg"),
    ("test/IDRiD_001", "test", "right", "left", "b. Testing Set/IDRiD_001.jpg"),
    ("test/IDRiD_002", "test", "left", "right", "b. Testing Set/IDRiD_002.jpg"),
    ("test/IDRiD_003", "test", "right", "left", "b. Testing Set/IDRiD_003.jpg"),
    ("test/IDRiD_004", "test", "left", "right", "b. Testing Set/IDRiD_004.jpg"),
    ("test/IDRiD_005", "test", "right", "left", "b. Testing Set/IDRiD_005.jpg"),
    ("test/IDRiD_006", "test", "left", "right", "b. Testing Set/IDRiD_006.jpg"),
]
ROOTS = {"plain": "C. Localization", "doubled": "C. Localization/C. Localization"}
DISC_TRAIN = "2. Groundtruths/1. Optic Disc Center Location/a. IDRiD_OD_Center_Training Set_Markups.csv"
FOVEA_TEST = "2. Groundtruths/2. Fovea Center Location/IDRiD_Fovea_Center_Testing Set_Markups.csv"


rows = columns("image_id", "split", "fovea_position", "laterality", "relpath")


def expected(layout, drop=()):
    return [(i, s, f, e, f"{ROOTS[layout]}/1. Original Images/{name}") for i, s, f, e, name in EXPECTED
            if i not in drop]


@pytest.fixture(params=sorted(ROOTS))
def layout(request):
    return request.param


@pytest.fixture
def folder(tmp_path, layout):
    return raw_copy(raw_idrid_loc, tmp_path / "idrid", seed=7, image=solid, layout=layout)


def test_records_row_by_row(folder, layout):
    load = idrid_loc.read(folder)
    assert rows(load) == expected(layout)
    assert load.skipped == [] and {r.modality for r in load.records} == {"cfp"}
    assert load.by_id()["train/IDRiD_001"].extra == {"disc_centre": (342.0, 151.0), "fovea_centre": (218.0, 162.0)}
    assert any("no fovea centre for 1 image" in w and "idrid_004.jpg" in w for w in load.warnings)
    assert "implausible_centres" not in load.metadata and not any("outside the image" in w for w in load.warnings)


def test_missing_image_is_skipped_and_reported(folder, layout):
    (folder / ROOTS[layout] / "1. Original Images/b. Testing Set/IDRiD_003.jpg").unlink()
    load = idrid_loc.read(folder)
    assert rows(load) == expected(layout, drop={"test/IDRiD_003"})
    [skip] = load.skipped
    assert (skip.image_id, skip.row) == ("test/IDRiD_003", 4) and "Testing Set_Markups" in skip.file


def test_renamed_column_and_bad_coordinate_name_file_and_row(folder, layout):
    disc = folder / ROOTS[layout] / DISC_TRAIN
    text = disc.read_text()
    disc.write_text(text.replace("X- Coordinate", "Xpos"))
    with pytest.raises(DataError, match="X- Coordinate") as info:
        idrid_loc.read(folder)
    assert info.value.file == str(disc)
    disc.write_text(text.replace("IDRiD_002,86,", "IDRiD_002,8x0,"))
    with pytest.raises(DataError, match="'8x0' is not a number") as info:
        idrid_loc.read(folder)
    assert (info.value.file, info.value.row) == (str(disc), 3)


FOVEA_TRAIN = "2. Groundtruths/2. Fovea Center Location/IDRiD_Fovea_Center_Training Set_Markups.csv"
WIDTH, HEIGHT = raw_idrid_loc.FRAME


@pytest.mark.parametrize("landmark, cell", [
    ("disc", "-1,151"), ("disc", "342,-0.5"), ("disc", f"{WIDTH + 1},151"), ("disc", f"342,{HEIGHT + 0.5}"),
    ("disc", "inf,151"), ("fovea", "218,-inf"), ("fovea", "1e9,162"), ("fovea", f"-3,{HEIGHT * 2}")])
def test_a_centre_outside_the_image_is_read_as_missing_with_a_count_and_its_row_named(folder, layout, landmark,
                                                                                    cell):
    path = folder / ROOTS[layout] / (DISC_TRAIN if landmark == "disc" else FOVEA_TRAIN)
    written = "342,151" if landmark == "disc" else "218,162"
    text = path.read_text()
    assert f"IDRiD_001,{written}," in text
    path.write_text(text.replace(f"IDRiD_001,{written},", f"IDRiD_001,{cell},"))
    load = idrid_loc.read(folder)
    assert rows(load) == [row if row[0] != "train/IDRiD_001" else (*row[:2], None, None, row[4])
                          for row in expected(layout)]  # the image stays; its position and eye are unknown
    kept = (342.0, 151.0) if landmark == "fovea" else (218.0, 162.0)
    other = "disc_centre" if landmark == "fovea" else "fovea_centre"
    assert load.by_id()["train/IDRiD_001"].extra == {f"{landmark}_centre": None, other: kept}
    assert load.metadata["implausible_centres"] == 1
    [warning] = [w for w in load.warnings if "outside the image" in w]
    assert warning.startswith(f"{path}: 1 {landmark} centre(s) outside the image read as missing")
    assert f"row 2 ({cell.replace(',', ', ')} in {WIDTH} x {HEIGHT})" in warning.replace("1e+09", "1e9")


@pytest.mark.parametrize("cell", ["0,0", f"{WIDTH},{HEIGHT}", f"{WIDTH - 0.5},0.25"])
def test_a_centre_on_the_frame_edge_is_inside(folder, layout, cell):
    path = folder / ROOTS[layout] / FOVEA_TRAIN
    path.write_text(path.read_text().replace("IDRiD_001,218,162,", f"IDRiD_001,{cell},"))
    load = idrid_loc.read(folder)
    x, y = (float(v) for v in cell.split(","))
    assert load.by_id()["train/IDRiD_001"].extra["fovea_centre"] == (x, y)
    assert "implausible_centres" not in load.metadata


def test_absent_part_names_the_expected_file(tmp_path):
    raw_idrid.write(tmp_path / "idrid", seed=7, image=solid)
    with pytest.raises(DataError, match="IDRiD train disc centre file"):
        idrid_loc.read(tmp_path / "idrid")


def test_parts_share_the_idrid_folder_and_count_only_where_present(tmp_path):
    raw_idrid.write(tmp_path / "idrid", seed=7, image=solid)
    assert dataset_folder(tmp_path, "idrid_loc") == tmp_path / "idrid"
    assert dataset_present(tmp_path, "idrid") and not dataset_present(tmp_path, "idrid_loc")
    raw_idrid_loc.write(tmp_path / "idrid", seed=7, image=solid)
    assert dataset_present(tmp_path, "idrid_loc")
    part_b = [r.image_id for r in read_dataset("idrid", tmp_path).records]
    assert part_b == [r.image_id for r in idrid.read(tmp_path / "idrid").records]  # part B reads as before
    load = load_dataset("idrid_loc", tmp_path)
    assert load.metadata["split_source"] == "official+carved_val"
    assert {r.split for r in load.records} == {"train", "val", "test"}
    assert all(r.split == "test" for r in load.records if r.image_id.startswith("test/"))
