"""Infrastructure below the core: atomic files, logging, tracing, safe text, input files."""
