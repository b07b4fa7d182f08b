"""Search providers: reverse image search, web search, Wikipedia, a local corpus and recorded traces.

Each provider is a real client of a real service (or of files on disk), behind the small protocols
in :mod:`retrieval.providers.base`. Keys come from the environment; a provider whose key is missing
says which variable to set.

Bing Visual Search is not here: Microsoft retired the Bing Search APIs (including Visual Search)
on 11 August 2025, so there is no endpoint left to call.
"""
