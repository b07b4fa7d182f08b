"""Where evidence comes from: search providers, scraping, summaries, reliability and the evidence store."""
