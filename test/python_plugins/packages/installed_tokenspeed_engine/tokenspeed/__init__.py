"""Stands in for an installed TokenSpeed engine's top-level package (a
regular package, as the engine ships it)."""
ENGINE = "installed-tokenspeed-engine"
