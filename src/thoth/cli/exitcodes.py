"""Exit codes of `tht`, the same for every command (documented in the README)."""

OK = 0
FAILED = 1  # the command ran and found problems (invalid input, refused batch)
USAGE = 2  # wrong arguments (Click's own code)
NOT_PUBLISHABLE = 3  # valid, but review items / orphans / candidates block publication
PRECONDITION = 4  # refused to start: dirty worktree, missing config, not a Git repository
