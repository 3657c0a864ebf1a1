"""Issue 29 review, the window: the team connection line holds the publisher's password, so
Settings > Team library... shows it masked (a screenshot or a shared screen shows no secret)
until Show is pressed, and nothing else in the dialog carries it."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QPushButton, QWidget

from app.team.settings_dialog import TeamSettingsDialog
from tests.gui_support import child

SECRET = "Sekr1tPa55w0rd"
LINE = f"postgresql://sa3_publisher:{SECRET}@studio:5432/sa3_team"


def test_the_line_is_masked_on_screen_until_show_is_pressed(qtbot):
    dialog = TeamSettingsDialog(LINE, "ann (from Settings > Labels)")
    qtbot.addWidget(dialog)
    dialog.show()
    edit, show = child(dialog, "teamConnectionEdit"), child(dialog, "teamShowLineButton")
    assert SECRET not in edit.displayText() and dialog.line() == LINE  # kept, not shown
    # only the password is masked: where the line points stays readable
    assert edit.displayText() == "postgresql://sa3_publisher:\u2022\u2022\u2022\u2022@studio:5432/sa3_team"
    on_screen = [w.text() for w in dialog.findChildren(QLabel)] + \
        [w.text() for w in dialog.findChildren(QPushButton)] + \
        [w.toolTip() for w in dialog.findChildren(QWidget)]
    assert not any(SECRET in text for text in on_screen)
    show.click()
    assert edit.displayText() == LINE and show.text() == "Hide"
    show.click()
    assert SECRET not in edit.displayText() and dialog.line() == LINE
