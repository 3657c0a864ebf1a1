"""Reusable plot widgets: waveform with inpaint spans, spectrogram, latent heatmap.

Widgets hold layout and emit signals; controllers decide what the signals mean. `peaks` is
plain numpy (no Qt) so its downsampling can be tested and benchmarked on its own.
"""
