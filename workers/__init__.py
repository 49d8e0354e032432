"""The ARQ workers of RED Searcher: load once, run jobs under leases, post in threads."""
