"""Many inputs at once: the targets of a batch and the engines that run it."""
