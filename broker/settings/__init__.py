"""The broker's settings: where they come from and how they layer (layering)."""
