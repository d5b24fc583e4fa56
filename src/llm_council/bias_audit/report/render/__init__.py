"""Rendering: a finished report as text, CSV, JSON and one HTML file; format, never estimate."""
