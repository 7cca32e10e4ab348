"""Design spaces: value syntax, safe constraints, the space itself, sampling and presets (Stargazer §5.1,
Lee & Brooks §3.4)."""
