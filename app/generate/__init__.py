"""Generate: the generation panel (prompt and settings), its controller, the Precision and
Codec tier choices, and init audio with its inpaint spans."""
