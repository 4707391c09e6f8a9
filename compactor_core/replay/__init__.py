"""The bill of a saved conversation under prompt caching, request by request."""
