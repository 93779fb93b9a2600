"""The engine's metrics package."""
