"""One module per ``focus-eval`` subcommand, each with ``add_arguments(parser)`` and ``run(args) -> int``."""
