"""Figures, project files and standalone HTML reports."""
