"""Render resources/icons/app.svg into a Windows .ico (16 to 256 px) for the executables and
the installer: PyInstaller and Inno Setup take .ico files, and the app's icon is an SVG.

    pip install pillow && python packaging/make_icon.py packaging/windows/sa3-studio.ico

Qt draws the SVG at 256 px (QtSvg's renderer); Pillow writes the .ico with every size.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

from PIL import Image
from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

SIZES = [(16, 16), (24, 24), (32, 32), (48, 48), (64, 64), (128, 128), (256, 256)]
SVG = Path(__file__).resolve().parent.parent / "resources" / "icons" / "app.svg"


def render_png(side: int) -> bytes:
    renderer = QSvgRenderer(str(SVG))
    if not renderer.isValid():
        raise SystemExit(f"error: {SVG} is not an SVG Qt can draw")
    image = QImage(side, side, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    renderer.render(painter)
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    return bytes(data.data())


def main(target: str) -> int:
    _app = QGuiApplication.instance() or QGuiApplication(["make_icon", "-platform", "offscreen"])
    Image.open(io.BytesIO(render_png(256))).save(target, format="ICO", sizes=SIZES)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "sa3-studio.ico"))
