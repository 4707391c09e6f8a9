"""Default settings, in one light module that the CLI can import at start-up for free."""

KEEP_RECENT = 3  # tool-result turns that micro compaction keeps whole
THRESHOLD = 50_000  # auto: full compaction above this estimate
MAX_TOKENS = 2000  # the summary's budget
MAX_PROMPT_TOKENS = 100_000  # what is sent to the provider is shrunk to fit this
# Snapshots go to the user's state folder (locations.user_store); --compat bareagent keeps the
# seed's folder in the working directory (SPEC §5 calls snapshots "transcript snapshots").
USER_SNAPSHOT_DIR = "~/.local/state/ctxpack"  # as --help shows it: $XDG_STATE_HOME/ctxpack
BAREAGENT_SNAPSHOT_DIR = ".transcripts"
SESSION_ID = "default"
TIMEOUT = 60.0  # seconds per summary request; 0: no limit
RETRIES = 2  # of a summary request, on 429, 5xx and connection errors
MAX_CONCURRENCY = 8  # summary requests in flight at once in a batch
MIN_IDLE = 60.0  # seconds an agent session file must be unchanged before it is rewritten
# The --provider choices, here so start-up imports no provider code; providers.registry.PROVIDERS
# builds each one (a test keeps the two in step).
PROVIDER_NAMES = ("extractive", "openai", "anthropic", "command")
# the config file's table of what each tool reads, writes, lists or runs (stale results first)
TOOLS_TABLE = "tools"
# --format values that name no agent: a conversation of messages, or told from the content.
MESSAGES_FORMAT = "messages"
AUTO_FORMAT = "auto"
# auto's per-turn policy (cache_policy.py): "cache-aware" changes the prompt rarely, in batches of
# markers that free MIN_GAIN tokens (chosen by the replay over the corpus: README); "every-turn"
# is the seed's micro on every call.
CACHE_AWARE = "cache-aware"
EVERY_TURN = "every-turn"
POLICIES = (CACHE_AWARE, EVERY_TURN)
MIN_GAIN = 5_000
# rescue: the window a session must fit (the smallest of the agents' own models', Claude's)
RESCUE_WINDOW = 200_000
