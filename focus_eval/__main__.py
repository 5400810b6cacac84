"""Entry point for ``python -m focus_eval`` (also used by ``accelerate launch -m focus_eval``)."""

from focus_eval.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
