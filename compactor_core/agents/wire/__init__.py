"""Message shapes agents share with model APIs: Gemini parts, OpenCode parts, Responses items."""
