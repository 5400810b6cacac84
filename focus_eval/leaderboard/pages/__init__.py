"""The leaderboard's pages: what each page shows (its context and data tables), from collected results and
the analyses, and the build that writes them."""
