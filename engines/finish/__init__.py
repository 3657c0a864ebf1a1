"""Finishing a take for delivery (issue 11): trim, fades, loudness and true peak, seamless
loops with loop points, delivery formats, quality flags, presets and export names.

Everything here is plain numpy/scipy on float32 (N, channels) audio, no Qt. The chain is
non-destructive: `FinishSettings` are stored beside the raw take and `chain.finish` derives the
finished audio from them whenever it is needed. Import the submodules you use; this package
imports nothing, so loading one step does not load the others.
"""
