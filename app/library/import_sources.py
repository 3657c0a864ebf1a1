"""The Library page's Source filter: every sound, the generated ones, the imported ones, or the
sounds of one imported folder (values as engines.store's `source` filter takes them).

Object name: librarySourceFilter.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QComboBox

ANY_SOURCE = "Any source"
FIXED = ((ANY_SOURCE, None), ("Generated", "generated"), ("Imported sounds", "imported"))


class SourceFilter(QComboBox):
    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("librarySourceFilter")
        self.setToolTip("Show sounds generated here, imported sounds, or one imported folder")
        for label, value in FIXED:
            self.addItem(label, value)

    def set_folders(self, roots: list[str]) -> None:
        """The imported folders (each by its name, its path in the tooltip); the chosen one
        stays chosen, listed even while it holds no sound, so the choice stays visible."""
        current = self.currentData()
        fixed = {value for _label, value in FIXED}
        names = list(roots) + ([current] if current not in fixed and current not in roots
                               else [])
        if [self.itemData(i) for i in range(len(FIXED), self.count())] == names:
            return
        blocked = self.blockSignals(True)
        try:
            while self.count() > len(FIXED):
                self.removeItem(self.count() - 1)
            for root in names:
                self.addItem(Path(root).name or root, root)
                self.setItemData(self.count() - 1, root, _TOOLTIP)
            self.setCurrentIndex(max(self.findData(current), 0))
        finally:
            self.blockSignals(blocked)


_TOOLTIP = 3  # Qt.ItemDataRole.ToolTipRole
