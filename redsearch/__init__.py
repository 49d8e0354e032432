"""The redsearch command line."""
