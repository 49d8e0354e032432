"""Web search backends (SearxNG, Brave, Tavily) with fallback and shared rate limits, and a
page reader that refuses unsafe addresses and caps time, bytes and content types."""
