"""The `vsandx` command (cli.main:main). Each subcommand imports its area lazily so `--help` is instant:
the offline ones (simulate, parse, diagnose, evaluate, train: cli.offline) and the service's processes
(serve, worker, beat: cli.online)."""
