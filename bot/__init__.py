"""The Slack surface of RED Searcher: the bot acks, validates and enqueues."""
