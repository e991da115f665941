"""The [section] models, one module per TOML section; ``spec.model.Spec`` holds them together."""
