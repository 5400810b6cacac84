"""Screenshots of what a user sees in a terminal, for the README (docs/img).

    python scripts/screenshots.py [--out docs/img] [--work DIR]

Runs ``focus-eval demo`` (one model) in a pseudo-terminal of 110 x 26 characters, replays every byte it writes
through a terminal emulator (``pyte``, ``pip install pyte``), keeps the screen as it was while a progress bar was
half-way, and the screen at the end, and photographs each with headless Chromium (``/usr/bin/chromium`` through
Python ``playwright``): ``terminal-progress.png`` and ``terminal-done.png``. Nothing is drawn by hand: the pictures
are the demo's own output."""

from __future__ import annotations

import argparse
import fcntl
import html
import os
import pty
import re
import select
import shutil
import struct
import sys
import tempfile
import termios
from pathlib import Path

COLUMNS, LINES = 110, 26
# a tqdm bar between 20 % and 85 %: the moment worth showing
HALF_WAY = re.compile(r"\b([2-7][0-9]|8[0-5])%\|")
COLOURS = {"black": "#1e1e1e", "red": "#f14c4c", "green": "#23d18b", "brown": "#e5e510", "yellow": "#e5e510",
           "blue": "#3b8eea", "magenta": "#d670d6", "cyan": "#29b8db", "white": "#e5e5e5", "default": "#d4d4d4"}


def record(command: list[str], env: dict[str, str]) -> tuple[list[str], list[list], list[list]]:
    """Run ``command`` on a pseudo-terminal; return the final text and the half-way and final screens (rows of
    pyte characters)."""
    import pyte

    screen = pyte.Screen(COLUMNS, LINES)
    stream = pyte.ByteStream(screen)
    pid, fd = pty.fork()
    if pid == 0:  # the child: the terminal is its stdin, stdout and stderr, LINES x COLUMNS in size
        fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
        os.execvpe(command[0], command, env)
    seen = bytearray()
    half_way = None
    while True:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
        stream.feed(chunk)
        if half_way is None and any(HALF_WAY.search(line) for line in screen.display):
            half_way = snapshot(screen)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n" + "\n".join(screen.display))
    if half_way is None:
        tail = bytes(seen[-3000:]).decode("utf-8", "replace")
        raise SystemExit(f"no progress bar was seen half-way in {len(seen)} bytes; the last of them:\n{tail!r}\n"
                         "no progress bar was seen half-way; is the demo's progress on?")
    return list(screen.display), half_way, snapshot(screen)


def snapshot(screen) -> list[list]:
    return [[screen.buffer[y][x] for x in range(screen.columns)] for y in range(screen.lines)]


def to_html(rows: list[list]) -> str:
    lines = []
    while rows and not "".join(char.data for char in rows[-1]).strip():  # no empty rows below the text
        rows = rows[:-1]
    for row in rows:
        cells = []
        for char in row:
            fg = str(char.fg)
            colour = COLOURS.get(fg) or (f"#{fg}" if re.fullmatch(r"[0-9a-fA-F]{6}", fg) else COLOURS["default"])
            style = f"color:{colour}"
            if char.bold:
                style += ";font-weight:bold"
            cells.append(f'<span style="{style}">{html.escape(char.data)}</span>')
        lines.append("".join(cells).rstrip())
    return ("<!doctype html><meta charset=utf-8><style>body{margin:0;background:#1e1e1e}"
            "pre{margin:0;padding:14px 16px;font:14px/1.35 'DejaVu Sans Mono',monospace;color:#d4d4d4;"
            "background:#1e1e1e;display:inline-block}</style><pre id=t>" + "\n".join(lines) + "</pre>")


def photograph(pages: dict[str, str], out: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                    args=["--headless", "--no-sandbox", "--disable-gpu",
                                          "--disable-background-networking"])
        page = browser.new_page(viewport={"width": 1100, "height": 700}, device_scale_factor=1)
        for name, markup in pages.items():
            page.set_content(markup)
            page.locator("#t").screenshot(path=str(out / name))
        browser.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/img"))
    parser.add_argument("--work", type=Path, help="the demo's folder (default: a temporary one)")
    parser.add_argument("--model", default="efficientnet-lite0")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="focus-shots-"))
    env = dict(os.environ, COLUMNS=str(COLUMNS), LINES=str(LINES), TERM="xterm-256color",
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    command = [sys.executable, "-m", "focus_eval", "demo", "--out", str(work / "demo"), "--models", args.model]
    text, half_way, done = record(command, env)
    args.out.mkdir(parents=True, exist_ok=True)
    photograph({"terminal-progress.png": to_html(half_way), "terminal-done.png": to_html(done)}, args.out)
    print("\n".join(line.rstrip() for line in text if line.strip()))
    print(f"wrote {args.out / 'terminal-progress.png'} and {args.out / 'terminal-done.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
