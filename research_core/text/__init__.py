"""Text as pure functions: sentences, figures, periods, terms, conflicting figures of sources.
Imports nothing of research_core but other research_core.text modules (the ground floor)."""
