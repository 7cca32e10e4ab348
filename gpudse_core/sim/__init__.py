"""Simulation: the analytical models (001, 004), the built-in simulator, GPGPU-Sim I/O, campaigns and their store,
uploads."""
