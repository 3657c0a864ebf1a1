"""The Take page of the window's centre: the selected take's waveform, the Finish panel under
it, its spectrogram and latents; and the transport (play, loop, auto-play, volume, position),
which the window puts under the centre's pages (`transport`: it plays library rows too). Layout
only: app.takes.controller shows takes and plays them.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSlider,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.common.theme import icon
from app.widgets.latent_view import LatentView
from app.widgets.named import named
from app.widgets.spectrogram import SpectrogramView
from app.widgets.waveform import WaveformView

WAVEFORM_MIN_HEIGHT = 160  # px
NO_AUDIO_TEXT = "No audio output: playback is off"


class TakeViewer(QWidget):
    """`finish_panel` (app.finish.panel, built by the window) goes between the waveform and
    the spectrogram."""

    def __init__(self, finish_panel: QWidget) -> None:
        super().__init__()
        layout = QVBoxLayout(self)
        self.model_banner = named(QLabel(), "modelBanner")
        layout.addWidget(self.model_banner)
        self.waveform = WaveformView()
        # The waveform is what a designer looks at: at the window's minimum size it keeps
        # room for two channels and their time axis (the window's minimum grows instead).
        self.waveform.setMinimumHeight(max(self.waveform.minimumSizeHint().height(),
                                           WAVEFORM_MIN_HEIGHT))
        layout.addWidget(self.waveform, stretch=3)
        layout.addWidget(finish_panel)
        self.tabs = QTabWidget()
        self.spectrogram = SpectrogramView()
        self.latent_view = LatentView()
        self.tabs.addTab(self.spectrogram, "Spectrogram")
        self.tabs.addTab(self.latent_view, "Latent")
        layout.addWidget(self.tabs, stretch=2)
        self.transport = named(QWidget(), "transportBar")
        self._build_transport(QHBoxLayout(self.transport))

    def _build_transport(self, transport: QHBoxLayout) -> None:
        # one icon for both states: the controllers switch the text between Play and Pause
        self.play_button = named(QPushButton("Play"), "playButton", icon("play-pause"))
        self.play_button.setToolTip("Play / pause (Space)")
        self.loop_check = named(QCheckBox("Loop (L)"), "loopCheck", icon("loop"))
        self.autoplay_check = named(QCheckBox("Auto-play new takes"), "autoplayCheck")
        self.autoplay_check.setChecked(True)
        self.volume_slider = named(QSlider(Qt.Orientation.Horizontal), "volumeSlider")
        self.volume_slider.setRange(0, 100)
        self.volume_slider.setValue(80)
        self.volume_slider.setMaximumWidth(120)
        self.position_label = named(QLabel("0.00 / 0.00 s"), "positionLabel")
        # without an audio output the transport says so in words, not only in Play's tooltip
        self.no_audio_label = named(QLabel(NO_AUDIO_TEXT), "noAudioLabel")
        self.no_audio_label.setVisible(False)
        transport.addWidget(self.play_button)
        transport.addWidget(self.loop_check)
        transport.addWidget(self.autoplay_check)
        transport.addWidget(QLabel("Volume"))
        transport.addWidget(self.volume_slider)
        transport.addStretch(1)
        transport.addWidget(self.no_audio_label)
        transport.addWidget(self.position_label)
