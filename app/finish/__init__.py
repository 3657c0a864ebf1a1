"""Finishing (issue 11): the Finish panel, its trim/fade handles, presets, loops, A/B and the
loudness readout, computed off the GUI thread."""
