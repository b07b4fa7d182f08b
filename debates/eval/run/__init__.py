"""Running a batch: the runner, its rows and lock, the Ray runner with its cluster-wide permits and rate limits."""
