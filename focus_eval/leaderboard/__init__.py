"""The static leaderboard site: ``build_site(results_dirs, out_dir)`` reads results folders and writes HTML."""

from focus_eval.leaderboard.pages.build import SiteReport, build_site

__all__ = ["SiteReport", "build_site"]
