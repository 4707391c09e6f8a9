"""The decision: the pipeline of micro, full and auto, its policies, the estimate."""
