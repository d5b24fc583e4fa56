"""The HTML dashboard's pieces: findings header, reviewer cards, plots, tables, SVG and style."""
