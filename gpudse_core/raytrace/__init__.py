"""Zatel (paper 002): heatmap-driven representative-pixel selection and GPU downscaling for ray tracing.

:mod:`.heatmap` reads heatmaps and maps colours to cost; :mod:`.zatel` quantises, divides the frame,
selects pixels, writes the outputs and combines per-group simulator results.
"""
