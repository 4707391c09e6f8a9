"""Reading a conversation: where tool calls, results and images are, whose words are whose."""
