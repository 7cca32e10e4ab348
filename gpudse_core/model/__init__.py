"""Regression models: spline bases, Stargazer's stepwise search, Lee & Brooks' statistics, validation."""
