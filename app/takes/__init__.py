"""The session's takes: the takes panel, the viewer of the selected take (waveform,
spectrogram, latents, transport), choosing and playing takes, and comparing codec tiers."""
