"""LoRA/DoRA adapters for the DiT: reading adapter files, folding them into the branch engine's
operands, stacking them with their own strengths, and describing them for provenance."""
