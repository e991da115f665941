"""template."""
