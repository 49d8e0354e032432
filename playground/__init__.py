"""A local stand-in for Slack: the fake Web API (also used by the tests), Socket Mode, and the
browser playground."""
