"""How agents interact: debate configurations, teams on AutoGen group chats, runners and the CLI."""
