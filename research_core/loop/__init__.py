"""The research loop, one folder per phase, lowest first; engine.py on top runs them all:

  memory/      what a run knows and keeps: evidence, goal tree, memory, the run state
  planning/    the question split into sub-questions, and read in code (clauses, names, why)
  gathering/   a round's hits scored, judged and kept as evidence; memory compressed
  review/      a node done (coverage), the root's gaps, reflection, steers, the upgrade to deep
  answering/   the extractive answer: whole sentences of the kept evidence, cited
  report/      the reporter's cited report, its claim check, what its queries teach
  publishing/  what people see and when: parts, progress notes, plan view, follow-ups, watch

A module imports only from its own phase or an earlier one, and engine.py from any
(tests/test_layout.py); below the loop it may import the engine's lower layers (text, the
top-level modules, models, search, budget, delivery)."""
