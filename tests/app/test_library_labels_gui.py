"""The Library page's inspector keeps a take's UCS labels (issue 31): typed into its label
edits, saved with the tags and notes, and carried by every way out of the window - drag, Save
As and Export to folder - named by them (`ucs` numbers the set's variations in FXName) and read
back from the files by wavinfo. The audio is never touched; with a UCS list imported an unknown
CatID is refused with the closest ones, without one it is kept and said once."""

from __future__ import annotations

import hashlib
from pathlib import Path

import wavinfo

from engines.delivery.ucs import import_ucs_csv
from tests.app.test_gui import child, generate

GRAVEL = {"labelCategoryEdit": "FOOTGrvl", "labelFxNameEdit": "Gravel Step",
          "labelCreatorEdit": "JD", "labelSourceEdit": "SA3"}


def labels_in(path: Path) -> tuple[str | None, ...]:
    root = wavinfo.WavInfoReader(str(path)).ixml.raw_xml.getroot()
    return tuple(root.findtext(where) for where in ("USER/CATID", "USER/FXNAME",
                                                    "ASWG/creatorId", "ASWG/sourceId"))


def select_seed(win, seed: int):
    view = child(win, "libraryView")
    records = view.model().records
    row = next(i for i, record in enumerate(records) if record.seed == seed)
    view.selectRow(row)
    return records[row]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_inspector_labels_are_kept_and_carried_by_every_way_out(qtbot, window, tmp_path):
    generate(qtbot, window, "footstep on gravel", seconds=0.5, seed=5, variations=2)
    studio = window.studio
    record = select_seed(window, 6)  # the second of the two variations
    before = sha(record.audio_path)
    for name, text in GRAVEL.items():
        child(window, name).setText(text)
    child(window, "librarySaveMetaButton").click()
    kept = studio.library.get(record.id)
    assert kept.labels == {"catid": "FOOTGrvl", "category": "", "subcategory": "",
                           "fx_name": "Gravel Step", "creator": "JD", "source": "SA3"}
    said = studio.notifier.history[-1]  # no UCS list: written as given, and said
    assert "'FOOTGrvl' was not checked" in said and "Settings > Labels and UCS list" in said
    assert sha(kept.audio_path) == before

    select_seed(window, 5)  # another take shows its own labels, then this one's come back
    assert child(window, "labelCategoryEdit").text() == ""
    select_seed(window, 6)
    assert {name: child(window, name).text() for name in GRAVEL} == GRAVEL

    template = child(window, "nameTemplateEdit")  # the export name template, kept for all
    template.setText("ucs")
    template.editingFinished.emit()
    take = studio.session.for_library_id(record.id)
    dragged = studio.export_controller.file_for(take)
    assert dragged.name == "FOOTGrvl_Gravel Step 02_JD_SA3.wav"
    saved = studio.export_controller.save_take(take, tmp_path / "saved.wav")
    folder = tmp_path / "exported"
    folder.mkdir()
    exported = studio.library_controller.export_selected(str(folder))
    assert [p.name for p in exported] == ["FOOTGrvl_Gravel Step 02_JD_SA3.wav"]
    for path in (dragged, saved, exported[0]):
        assert labels_in(path) == ("FOOTGrvl", "Gravel Step", "JD", "SA3"), path
    assert sha(kept.audio_path) == before


def test_an_unknown_catid_is_refused_with_the_closest_when_a_list_is_imported(
        qtbot, window, tmp_path):
    ucs = tmp_path / "ucs.csv"
    ucs.write_text("CatID,Category,SubCategory\nFOOTGrvl,FOOTSTEPS,GRAVEL\n")
    import_ucs_csv(ucs)
    generate(qtbot, window, "footstep on gravel", seconds=0.5, seed=5)
    record = select_seed(window, 5)
    child(window, "labelCategoryEdit").setText("FOOTGrvel")
    child(window, "libraryTagsEdit").setText("gravel")
    child(window, "librarySaveMetaButton").click()
    said = window.studio.notifier.history[-1]
    assert "FOOTGrvel" in said and "FOOTGrvl" in said
    kept = window.studio.library.get(record.id)
    assert kept.labels["catid"] == "" and kept.tags == []  # nothing was saved
    child(window, "labelCategoryEdit").setText("FOOTGrvl")
    child(window, "librarySaveMetaButton").click()
    kept = window.studio.library.get(record.id)
    assert (kept.labels["catid"], kept.labels["category"], kept.labels["subcategory"]) == (
        "FOOTGrvl", "FOOTSTEPS", "GRAVEL")
    assert kept.tags == ["gravel"]
