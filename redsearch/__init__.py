"""The redsearch command line and the processes it starts: what ships (cli, up, processes,
supervisor, doctor, research, sources, usage). harness/ holds the benchmark and the suites."""
