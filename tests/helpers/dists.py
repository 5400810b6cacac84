"""The sdist and the wheel as users get them, checked: the licence in both, the docs and tests in the sdist,
torch as a range, the classifiers. Used by tests/system/test_packaging.py and by scripts/ci-wheel.sh:

    python -m helpers.dists copy DEST            # the files a build reads, copied to DEST (run from tests/)
    python -m helpers.dists check SDIST WHEEL    # one line per problem, exit 1 when there is one
"""

from __future__ import annotations

import configparser
import email.parser
import shutil
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# what the build reads: setup.cfg and MANIFEST.in say what of it goes into the sdist and the wheel
SOURCE = ("setup.cfg", "pyproject.toml", "MANIFEST.in", "README.md", "LICENSE", "constraints.txt", "Makefile",
          "focus_eval", "tasks", "models", "leaderboard", "docs", "tests", "scripts", "docker")
CLASSIFIERS = ("License :: OSI Approved :: Apache Software License", "Development Status :: ",
               "Programming Language :: Python :: 3 :: Only")


def copy_source(dest: Path) -> Path:
    """A copy of the source (no caches, no build folders), so nothing stale of the checkout reaches a build."""
    ignore = shutil.ignore_patterns("__pycache__", "*.py[cod]", "*.egg-info", "build", "dist", ".hypothesis")
    for name in SOURCE:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, dest / name, ignore=ignore)
        else:
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / name, dest / name)
    return dest


def shipped_docs_and_tests() -> list[str]:
    """Every file of docs/ and tests/ (relative paths), as the sdist must carry them."""
    found = []
    for folder in ("docs", "tests"):
        files = (p.relative_to(ROOT) for p in sorted((ROOT / folder).rglob("*")) if p.is_file())
        found += [p.as_posix() for p in files if p.suffix not in (".pyc", ".pyo")
                  and not any(part == "__pycache__" or part.startswith(".") for part in p.parts)]
    return found


def sdist_problems(sdist: Path) -> list[str]:
    with tarfile.open(sdist) as tar:
        members = {m.name.split("/", 1)[1]: m for m in tar.getmembers() if "/" in m.name and m.isfile()}
        licence = tar.extractfile(members["LICENSE"]).read() if "LICENSE" in members else None
    problems = [f"the sdist lacks {name}" for name in ("LICENSE", "constraints.txt", *shipped_docs_and_tests())
                if name not in members]
    if licence is not None and licence != (ROOT / "LICENSE").read_bytes():
        problems.append("the sdist's LICENSE is not the repository's")
    return problems


def wheel_problems(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as whl:
        names = whl.namelist()
        licences = [n for n in names if ".dist-info/" in n and n.rsplit("/", 1)[-1] == "LICENSE"]
        metadata = email.parser.Parser().parsestr(whl.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
                                                  .decode("utf-8"))
        licence = whl.read(licences[0]) if licences else None
    problems = [] if licence == (ROOT / "LICENSE").read_bytes() else ["the wheel does not carry the LICENSE file"]
    if (metadata.get("License-Expression") or metadata.get("License")) != "Apache-2.0":
        problems.append("the wheel's metadata does not name the Apache-2.0 licence")
    classifiers = metadata.get_all("Classifier") or []
    problems += [f"no classifier {c!r}" for c in CLASSIFIERS if not any(x.startswith(c) for x in classifiers)]
    if not any(c.startswith("Programming Language :: Python :: 3.") for c in classifiers):
        problems.append("no Python-version classifier")
    for requirement in metadata.get_all("Requires-Dist") or []:
        if requirement.split(";")[0].replace(" ", "").startswith(("torch==", "torchvision==")):
            problems.append(f"the wheel pins {requirement} (a range lets it install beside another torch)")
    return problems


def install_requires() -> list[str]:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    return [r.strip() for r in cfg["options"]["install_requires"].splitlines() if r.strip()]


def constraints() -> dict[str, str]:
    """name -> pinned version, from constraints.txt."""
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[name.strip().lower()] = version.strip()
    return pins


def main(argv: list[str]) -> int:
    if argv[:1] == ["copy"] and len(argv) == 2:
        copy_source(Path(argv[1]))
        return 0
    if argv[:1] == ["check"] and len(argv) == 3:
        problems = sdist_problems(Path(argv[1])) + wheel_problems(Path(argv[2]))
        for problem in problems:
            print(problem)
        return 1 if problems else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
