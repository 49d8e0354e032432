"""Report: the reporter's cited report, the claim–evidence check, what its queries teach.
May import answering and every phase before it."""
