"""The `tht` command."""
