"""The Adapters panel (LoRA/DoRA files stacked on the model, each with its strength and switch)
and its controller."""
