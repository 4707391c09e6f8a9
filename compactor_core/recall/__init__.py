"""Recall: a marker's handle, the store of the originals it names, and what ``ctxpack mcp``
answers with them (issue 35)."""
