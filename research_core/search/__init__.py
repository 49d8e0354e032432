"""Search: the batched search tool, the local corpus
index, web backends and the safe page reader."""
