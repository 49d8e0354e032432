"""Publishing: what people see and when: answer parts, progress notes, plan view, follow-ups, watch.
May import report and every phase before it; in the loop only engine.py imports it."""
