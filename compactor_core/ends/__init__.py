"""Where an input comes from and where its result goes: sources, documents, destinations."""
