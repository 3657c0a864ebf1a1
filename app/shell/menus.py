"""The main window's menu bar. Keys that a controller or the takes list handles themselves are
shown in the menus as hints (app.shell.shortcuts_sheet), so every key the window answers to is
in a menu and on the F1 sheet. Layout only: app.shell.studio connects each action to what it
does."""

from __future__ import annotations

from PySide6.QtWidgets import QMainWindow

from app.common.theme import icon
from app.shell.shortcuts_sheet import add_hinted_action


class MainMenus:
    """The menus of `window`'s menu bar and their actions."""

    def __init__(self, window: QMainWindow) -> None:
        bar = window.menuBar()
        file_menu = bar.addMenu("&File")
        self.open_action = file_menu.addAction(icon("open"), "&Open init audio...")
        self.open_action.setShortcut("Ctrl+O")
        self.save_action = file_menu.addAction(icon("save"), "&Save take as...")
        self.save_action.setShortcut("Ctrl+S")
        self.copy_action = file_menu.addAction(icon("copy"), "&Copy take file")
        file_menu.addSeparator()
        self.render_list_action = file_menu.addAction(icon("list"), "&Render sound list...")
        self.render_list_action.setObjectName("renderListAction")
        file_menu.addSeparator()
        # sound files referenced in place in the library (app.library.import_controller)
        self.import_folder_action = file_menu.addAction(icon("open"), "&Import sound folder...")
        self.import_folder_action.setObjectName("importSoundFolderAction")
        self.import_folder_action.setStatusTip("List a folder of your own sound files in the "
                                               "library; the files stay where they are")
        self.rescan_folders_action = file_menu.addAction(icon("list"), "R&escan sound folders")
        self.rescan_folders_action.setObjectName("rescanSoundFoldersAction")
        self.rescan_folders_action.setStatusTip("Pick up sound files added, changed, moved or "
                                                "deleted in the imported folders")
        file_menu.addSeparator()
        self.quit_action = file_menu.addAction(icon("quit"), "&Quit")
        self.quit_action.setShortcut("Ctrl+Q")
        settings_menu = bar.addMenu("&Settings")
        self.labels_action = settings_menu.addAction(icon("rename"), "&Labels and UCS list...")
        self.labels_action.setObjectName("labelsSettingsAction")
        self.team_settings_action = settings_menu.addAction(icon("list"), "&Team library...")
        self.team_settings_action.setObjectName("teamSettingsAction")
        models_menu = bar.addMenu("&Models")
        self.models_action = models_menu.addAction(icon("models"), "&Manage models...")
        take_menu = bar.addMenu("&Take")
        # keys the controllers and the takes list handle themselves: shown, not bound again
        hinted = add_hinted_action
        self.generate_action = hinted(take_menu, icon("generate"), "&Generate", "Ctrl+Enter")
        self.play_action = hinted(take_menu, icon("play-pause"), "&Play / pause", "Space")
        self.loop_action = hinted(take_menu, icon("loop"), "&Loop playback", "L")
        self.previous_action = hinted(take_menu, icon("previous"), "Pre&vious take", "Up")
        self.next_action = hinted(take_menu, icon("next"), "&Next take", "Down")
        take_menu.addSeparator()
        self.live_action = take_menu.addAction(icon("play"), "Live a&udition on / off")
        self.live_action.setObjectName("liveAction")
        self.live_action.setShortcut("Ctrl+L")
        self.keep_live_action = hinted(take_menu, icon("save"), "&Keep the live take", "Enter")
        self.keep_live_action.setObjectName("keepLiveAction")
        take_menu.addSeparator()
        self.use_init_action = take_menu.addAction(icon("init"), "Use as &init")
        self.rename_action = take_menu.addAction(icon("rename"), "&Rename")
        self.rename_action.setShortcut("F2")
        self.delete_action = take_menu.addAction(icon("delete"), "&Delete")
        take_menu.addSeparator()
        self.compare_tiers_action = take_menu.addAction(icon("models"), "&Compare tiers")
        self.compare_tiers_action.setObjectName("compareTiersAction")
        self.find_similar_action = take_menu.addAction(icon("list"), "&Find similar")
        self.find_similar_action.setObjectName("findSimilarAction")
        self.find_similar_action.setShortcut("Ctrl+Shift+F")
        self.find_similar_action.setStatusTip("The takes of the library that sound most like "
                                              "the selected take, closest first")
        self.library_action = take_menu.addAction(icon("list"), "&Library / take page")
        self.library_action.setObjectName("showLibraryAction")
        self.library_action.setShortcut("Ctrl+B")
        self.publish_team_action = take_menu.addAction(icon("export"), "Publish to &team library")
        self.publish_team_action.setObjectName("publishTeamAction")
        view_menu = bar.addMenu("&View")
        # checked while the column shows; app.shell.columns folds and unfolds them
        self.settings_column_action = view_menu.addAction("&Settings column")
        self.settings_column_action.setObjectName("settingsColumnAction")
        self.settings_column_action.setShortcut("Ctrl+[")
        self.settings_column_action.setStatusTip("Fold the generation settings away for room, "
                                                 "or bring them back")
        self.session_column_action = view_menu.addAction("S&ession column")
        self.session_column_action.setObjectName("sessionColumnAction")
        self.session_column_action.setShortcut("Ctrl+]")
        self.session_column_action.setStatusTip("Fold the session's takes away for room, or "
                                                "bring them back")
        help_menu = bar.addMenu("&Help")
        self.shortcuts_action = help_menu.addAction(icon("keyboard"), "&Keyboard shortcuts")
        self.shortcuts_action.setObjectName("shortcutsAction")
        self.shortcuts_action.setShortcut("F1")
        self.about_action = help_menu.addAction(icon("app"), "&About SA3 Studio")
        self.about_action.setObjectName("aboutAction")
        # The menus, kept here: PySide's QAction.menu() hands back a wrapper that owns the
        # menu, and collecting it deleted the menu with its actions (seen on Python 3.12).
        self.menus = (file_menu, settings_menu, models_menu, take_menu, view_menu, help_menu)
        for menu, name in zip(self.menus, ("fileMenu", "settingsMenu", "modelsMenu",
                                           "takeMenu", "viewMenu", "helpMenu"), strict=True):
            menu.setObjectName(name)
