"""The extractive answer: whole sentences of the kept evidence, chosen for each sub-question,
each once and with its citation, for when no model writes the answer (`builder`)."""
