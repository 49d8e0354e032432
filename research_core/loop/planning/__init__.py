"""Planning: the question split into sub-questions (planner tier, its clauses, the evidence).
May import memory; no phase after it (gathering, review, answering, report, publishing)."""
