"""The main window's menu bar (app.main_window). Keys that a controller or the takes list
handles themselves are shown in the menus as hints (app.widgets.shortcuts_sheet), so every key
the window answers to is in a menu and on the F1 sheet."""

from __future__ import annotations

from PySide6.QtWidgets import QMainWindow

from app.theme import icon
from app.widgets.shortcuts_sheet import add_hinted_action


def build_menus(window: QMainWindow) -> None:
    """The menu bar; each action becomes an attribute of `window` (open_action, ...), the
    names the controllers connect to."""
    w = window
    bar = w.menuBar()
    file_menu = bar.addMenu("&File")
    w.open_action = file_menu.addAction(icon("open"), "&Open init audio...")
    w.open_action.setShortcut("Ctrl+O")
    w.save_action = file_menu.addAction(icon("save"), "&Save take as...")
    w.save_action.setShortcut("Ctrl+S")
    w.copy_action = file_menu.addAction(icon("copy"), "&Copy take file")
    file_menu.addSeparator()
    w.render_list_action = file_menu.addAction(icon("list"), "&Render sound list...")
    w.render_list_action.setObjectName("renderListAction")
    file_menu.addSeparator()
    w.quit_action = file_menu.addAction(icon("quit"), "&Quit")
    w.quit_action.setShortcut("Ctrl+Q")
    settings_menu = bar.addMenu("&Settings")
    w.labels_action = settings_menu.addAction(icon("rename"), "&Labels and UCS list...")
    w.labels_action.setObjectName("labelsSettingsAction")
    models_menu = bar.addMenu("&Models")
    w.models_action = models_menu.addAction(icon("models"), "&Manage models...")
    take_menu = bar.addMenu("&Take")
    # keys the controllers and the takes list handle themselves: shown, not bound again
    hinted = add_hinted_action
    w.generate_action = hinted(take_menu, icon("generate"), "&Generate", "Ctrl+Enter")
    w.play_action = hinted(take_menu, icon("play-pause"), "&Play / pause", "Space")
    w.loop_action = hinted(take_menu, icon("loop"), "&Loop playback", "L")
    w.previous_action = hinted(take_menu, icon("previous"), "Pre&vious take", "Up")
    w.next_action = hinted(take_menu, icon("next"), "&Next take", "Down")
    take_menu.addSeparator()
    w.use_init_action = take_menu.addAction(icon("init"), "Use as &init")
    w.rename_action = take_menu.addAction(icon("rename"), "&Rename")
    w.rename_action.setShortcut("F2")
    w.delete_action = take_menu.addAction(icon("delete"), "&Delete")
    take_menu.addSeparator()
    w.compare_tiers_action = take_menu.addAction(icon("models"), "&Compare tiers")
    w.compare_tiers_action.setObjectName("compareTiersAction")
    help_menu = bar.addMenu("&Help")
    w.shortcuts_action = help_menu.addAction(icon("keyboard"), "&Keyboard shortcuts")
    w.shortcuts_action.setObjectName("shortcutsAction")
    w.shortcuts_action.setShortcut("F1")
    w.about_action = help_menu.addAction(icon("app"), "&About SA3 Studio")
    w.about_action.setObjectName("aboutAction")
    # The menus, kept by the window: PySide's QAction.menu() hands back a wrapper that owns
    # the menu, and collecting it deleted the menu with its actions (seen on Python 3.12).
    w.menus = (file_menu, settings_menu, models_menu, take_menu, help_menu)
    for menu, name in zip(w.menus, ("fileMenu", "settingsMenu", "modelsMenu", "takeMenu",
                                    "helpMenu"), strict=True):
        menu.setObjectName(name)
