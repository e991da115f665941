"""preflight."""
