"""Tools the agents call: image forensics, image analysis, OCR, a logic check, time detection,
each described by a tool card, plus greedy tool selection."""

from m3d_agents.tools.cards import ToolCard, ToolContext, ToolRegistry
from m3d_agents.tools.catalogue import default_registry
from m3d_agents.tools.image_in_words import enable_image_describers

__all__ = ["ToolCard", "ToolContext", "ToolRegistry", "default_registry", "enable_image_describers"]
