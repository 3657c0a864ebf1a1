"""Getting takes out: drag-out, Copy and Save As through the one delivery layer, and the
studio's labels and UCS list that every delivered file carries."""
