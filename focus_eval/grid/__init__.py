"""The whole benchmark grid as jobs: plan it (``plan``), see where it stands (``status``), run it on this host
or submit it to Slurm (``executors``, ``slurm``), and collect scores, comparisons and the leaderboard
(``collect``)."""
