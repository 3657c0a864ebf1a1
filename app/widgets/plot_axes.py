"""Axis conventions shared by the plots of a take (waveform, spectrogram, latent view), so the
three line up and read alike before and after the first take."""

from __future__ import annotations

import pyqtgraph as pg

# What empty plots span before the first take: a short clip's worth of seconds.
EMPTY_SECONDS = 3.0
# Amplitude ticks: only the inner ones are labelled. Labels at +-1.0 sit on the plot edges and
# spill over them, so the L plot's "-1.0" landed on the R plot's "1.0".
AMPLITUDE_TICKS = [[(-1.0, ""), (-0.5, "-0.5"), (0.0, "0"), (0.5, "0.5"), (1.0, "")]]
# A plot too short for three labels a quarter of its height apart keeps only "0".
SHORT_AMPLITUDE_TICKS = [[(-1.0, ""), (-0.5, ""), (0.0, "0"), (0.5, ""), (1.0, "")]]


def plain_axis_label(plot: pg.PlotItem, side: str, text: str) -> None:
    """`text` as the axis title, unit included and fixed: pyqtgraph's automatic SI prefix
    turned seconds into "ms" and kHz into "mkHz" on short or empty plots."""
    axis = plot.getAxis(side)
    axis.enableAutoSIPrefix(False)
    plot.setLabel(side, text, units=None)
