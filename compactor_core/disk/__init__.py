"""Writing local files safely: atomic writes, the commit, metadata, private folders, leases."""
