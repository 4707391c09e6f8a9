"""The proxy's limits, in a module light enough for the CLI to read its option defaults from."""

MAX_BODY = 64 << 20  # bytes read to compact; a larger body goes through as it is
MAX_CONCURRENCY = 32  # requests in flight upstream at once
TIMEOUT = 600.0  # seconds the upstream may keep silent (a model thinking before it streams)
CONNECT_TIMEOUT = 10.0
