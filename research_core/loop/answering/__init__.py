"""Answering: the extractive answer, whole cited sentences of kept evidence, when no model does.
May import review, gathering, planning and memory (it uses planning's and memory's modules)."""
