"""The harnesses: the benchmark (bench*), the chaos, soak and load suites (chaos*, load, the
services they stand up), `redsearch eval` and `learn-report`; none of it runs in production."""
