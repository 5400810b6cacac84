#!/usr/bin/env bash
# The package as users install it: build the sdist and the wheel (the wheel from the sdist, so a file missing
# from the sdist fails here), check both with twine and tests/helpers/dists.py (the licence in both, docs and tests
# in the sdist, torch as a range), install the wheel (not editable) into a fresh virtual
# environment that reuses the project venv's installed dependencies (nothing is downloaded), and run it from
# another folder: --version, --tasks list, a tiny run on synthetic data, and a leaderboard of it.
# Usage: bash scripts/ci-wheel.sh [PYTHON]   (default .venv/bin/python; build and twine are in the test extra)
set -euo pipefail
cd "$(dirname "$0")/.."
py=${1:-.venv/bin/python}
PY="$(cd "$(dirname "$py")" && pwd)/$(basename "$py")"  # absolute, not resolved: the venv's own python
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# a copy of the source, so that build/ and *.egg-info never land in the checkout
(cd tests && "$PY" -m helpers.dists copy "$work/src")
"$PY" -m build --no-isolation --outdir "$work/dist" "$work/src" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
"$PY" -m twine check --strict "$work"/dist/*
# the licence in both, the docs and tests in the sdist, torch as a range, the classifiers (tests/helpers/dists.py)
(cd tests && "$PY" -m helpers.dists check "$work"/dist/focus_eval-*.tar.gz "$work"/dist/focus_eval-*.whl)

# a fresh venv: its own site-packages first (the wheel), then the project venv's (the dependencies) via a .pth
"$PY" -m venv --without-pip "$work/venv"
deps=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
mine=$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$deps" >"$mine/project-deps.pth"
"$PY" -m pip --python "$work/venv/bin/python" install -q --no-deps --no-index "$work"/dist/focus_eval-*.whl

mkdir "$work/elsewhere" && cd "$work/elsewhere"
export FOCUS_CACHE="$work/cache" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
fe="$work/venv/bin/focus-eval"
where=$("$work/venv/bin/python" -c 'import focus_eval; print(focus_eval.__file__)')
case "$where" in "$mine"/*) ;; *) echo "focus_eval imported from $where, not from the wheel"; exit 1;; esac
version=$("$work/venv/bin/python" -c 'from focus_eval.version import __version__; print(__version__)')
[ "$("$fe" --version)" = "focus-eval $version" ] || { echo "focus-eval --version disagrees with version.py"; exit 1; }
"$fe" --tasks list | grep -q dr_synth_desktop
"$fe" synth --out data --n 40 >/dev/null
"$fe" --model tiny-vit --tasks dr_synth_desktop --data-root data --output-path out --device cpu >run.log 2>&1 \
  || { cat run.log; exit 1; }
"$work/venv/bin/python" - "$version" <<'PY'
import json, sys, pathlib
[manifest] = pathlib.Path("out/tiny-vit").glob("run-*.json")
recorded = json.loads(manifest.read_text())["versions"]["focus-eval"]
assert recorded == sys.argv[1], f"the manifest records focus-eval {recorded}, version.py says {sys.argv[1]}"
assert pathlib.Path("out/tiny-vit/results.jsonl").read_text().strip()
PY
"$fe" leaderboard out -o site >/dev/null
[ -s site/index.html ] && ls site/static | grep -q . || { echo "the leaderboard's static files are missing"; exit 1; }
echo "wheel OK: $(basename "$work"/dist/focus_eval-*.whl), focus-eval $version"
