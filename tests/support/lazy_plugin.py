"""A plug-in module for the registry test: importing it is all it does (a registry imports it on its first lookup)."""
