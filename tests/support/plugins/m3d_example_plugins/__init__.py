"""Plug-ins of m3d-agents kept in a package of their own: a search provider and a backend kind."""
