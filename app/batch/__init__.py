"""Sound lists (issue 12): File > Render sound list..., its dialog, the run on the GPU worker and
its progress in the status bar."""
