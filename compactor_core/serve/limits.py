"""The proxy's limits, in a module light enough for the CLI to read its option defaults from."""

MAX_BODY = 64 << 20  # bytes read to compact; a larger body goes through as it is
MAX_CONCURRENCY = 32  # requests in flight upstream at once
TIMEOUT = 600.0  # seconds the upstream may keep silent (a model thinking before it streams)
CONNECT_TIMEOUT = 10.0
# A hostile or broken client must not hold the proxy: what it may take, at most.
CLIENT_TIMEOUT = 30.0  # seconds a client may take to send its headers, or between two pieces
# of its body (then 408, or the connection is closed)
MAX_CONNECTIONS = 512  # open at once; past it a request is answered 503
COMPACTION_THREADS = 2  # the policy is Python: more threads only hold more memory
MAX_MESSAGES = 100_000  # a body with more ("role" keys) goes through as it is, never parsed
LARGE_BODY = 1 << 20  # bytes: after a larger request, the memory it took goes back to the system
