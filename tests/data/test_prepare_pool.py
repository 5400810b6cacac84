"""The prepare pool never leaves a worker waiting for ever: a finished prepare lets its workers leave on their own
(no signal sent), and an idle worker ends on SIGTERM by the default action. A Python-level SIGTERM handler runs
only between bytecodes: a signal landing just before a worker blocked on the pool queue's lock stayed unhandled
until the wait ended, which it never did once the pool had stopped (a full test run once hung on it)."""

from __future__ import annotations

import multiprocessing
import signal

from helpers.images import noise_images

from focus_eval.data import prepare
from focus_eval.data.prepare import prepare_records
from focus_eval.data.records import ImageRecord


def test_an_idle_worker_ends_on_sigterm_without_a_python_handler():
    with multiprocessing.Pool(1, initializer=prepare._worker_signals) as pool:
        assert pool.apply(signal.getsignal, (signal.SIGTERM,)) == signal.SIG_DFL
        assert pool.apply(signal.getsignal, (signal.SIGINT,)) == signal.SIG_IGN
    assert signal.getsignal(signal.SIGTERM) != prepare._unwind  # the parent's handlers are its own


def test_a_finished_prepare_lets_its_workers_leave_without_a_signal(tmp_path, monkeypatch):
    from multiprocessing import pool as pools

    terminated = []
    real = pools.Pool.terminate
    monkeypatch.setattr(pools.Pool, "terminate", lambda self: terminated.append(self) or real(self))
    (tmp_path / "raw").mkdir()
    paths = []
    for i, picture in enumerate(noise_images(6, sizes=((40, 40),))):
        paths.append(tmp_path / "raw" / f"{i}.png")
        picture.save(paths[-1])
    records = [ImageRecord("demo", p.stem, p.stem, path=p, relpath=p.name) for p in paths]
    report = prepare_records(records, tmp_path, "demo", 16, workers=2, progress=False)
    assert report.written == 6 and not report.corrupt
    assert terminated == []
    # leaving early (the results not read to the end) still ends the workers at once
    results = prepare._run([(str(p), str(tmp_path / "again" / f"{p.name}.jpg"), 16) for p in paths], 2)
    next(results)
    results.close()
    assert len(terminated) == 1
