"""Drawing the leaderboard: charts and figures, table marks, numbers as printed, CSV data, the template
environment, per-image views from sample files (calibration bins, subgroups), page names and the output folder."""
