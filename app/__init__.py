"""covworker: merges every coverage upload of a commit into one report."""
