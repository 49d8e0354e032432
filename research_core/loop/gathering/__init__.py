"""Gathering: a round's hits scored (executor, relevance), kept or dropped, read deep, remembered.
May import planning and memory."""
