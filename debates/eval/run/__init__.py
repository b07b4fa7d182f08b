"""Running a batch: the runner, its rows, the Ray runner with its cluster-wide permits and rate limits."""
