"""What ctxpack keeps of every input it changes, where, and how it is put back."""
