"""The engine's runtime package."""
