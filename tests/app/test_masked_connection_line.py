"""Settings > Team library... shows the connection line with only its password masked
(where it points stays readable) and Show reveals it; the designer can still edit the line while
it is masked, and the password survives edits around it."""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.team.settings_dialog import TeamSettingsDialog
from app.widgets.masked_line_edit import SHOWN_MASK
from tests.gui_support import child

SECRET = "Sekr1tPa55w0rd"
LINE = f"postgresql://designer:{SECRET}@studio:5432/sa3_team"


def _dialog(qtbot, line: str = LINE) -> TeamSettingsDialog:
    dialog = TeamSettingsDialog(line, "ann")
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


def test_only_the_password_is_masked_and_show_reveals_it(qtbot):
    dialog = _dialog(qtbot)
    edit, show = child(dialog, "teamConnectionEdit"), child(dialog, "teamShowLineButton")
    assert edit.displayText() == f"postgresql://designer:{SECRET_MASK}@studio:5432/sa3_team"
    show.click()
    assert edit.displayText() == LINE and show.text() == "Hide"
    show.click()
    assert SECRET not in edit.displayText() and show.text() == "Show"
    assert dialog.line() == LINE


def test_editing_the_host_while_masked_keeps_the_password(qtbot):
    dialog = _dialog(qtbot)
    edit = child(dialog, "teamConnectionEdit")
    edit.setFocus()
    edit.setCursorPosition(edit.text().index("@studio") + len("@studio"))
    qtbot.keyClicks(edit, "-2")
    assert dialog.line() == f"postgresql://designer:{SECRET}@studio-2:5432/sa3_team"
    assert SECRET not in edit.displayText() and "@studio-2:" in edit.displayText()


def test_a_backspace_into_the_mask_lets_a_new_password_be_typed(qtbot):
    dialog = _dialog(qtbot)
    edit = child(dialog, "teamConnectionEdit")
    edit.setFocus()
    edit.setCursorPosition(edit.text().index("@"))
    qtbot.keyClick(edit, Qt.Key.Key_Backspace)
    qtbot.keyClicks(edit, "n3w")
    assert dialog.line() == "postgresql://designer:n3w@studio:5432/sa3_team"
    assert "n3w" not in edit.displayText() and SHOWN_MASK in edit.displayText()


def test_a_pasted_line_replaces_the_old_one_masked(qtbot):
    dialog = _dialog(qtbot)
    edit = child(dialog, "teamConnectionEdit")
    edit.setFocus()
    edit.selectAll()
    edit.insert("postgresql://bob:0ther@db.example:6543/team?sslmode=require")
    assert dialog.line() == "postgresql://bob:0ther@db.example:6543/team?sslmode=require"
    assert edit.displayText() == (f"postgresql://bob:{SHOWN_MASK}@db.example:6543/team"
                                  "?sslmode=require")


def test_a_line_typed_while_shown_is_kept_and_masked_on_hide(qtbot):
    dialog = _dialog(qtbot, "")
    edit, show = child(dialog, "teamConnectionEdit"), child(dialog, "teamShowLineButton")
    show.click()
    edit.setFocus()
    qtbot.keyClicks(edit, "postgresql://u:pw@h/db")
    assert edit.displayText() == "postgresql://u:pw@h/db"
    show.click()
    assert edit.displayText() == f"postgresql://u:{SHOWN_MASK}@h/db"
    assert dialog.line() == "postgresql://u:pw@h/db"


SECRET_MASK = SHOWN_MASK
