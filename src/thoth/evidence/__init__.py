"""Evidence authoring: typed units, prepare, validate, resolve (seed 000)."""
