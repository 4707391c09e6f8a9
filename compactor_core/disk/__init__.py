"""Local files: written safely (atomic writes, the commit, metadata, private folders, leases), and
named (a database of sessions and its FILE#SESSION)."""
