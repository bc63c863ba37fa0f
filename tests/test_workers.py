"""The batch's worker processes: every result once, errors raised, and a stop that cannot hang."""

from __future__ import annotations

import multiprocessing
import os
import sys
import time

import pytest

from tokenfactory_xl.portfolio.workers import WorkerFailed, Workers, imap_unordered, passes


def square(n: int) -> int:
    return n * n


def fail_on_seven(n: int) -> int:
    if n == 7:
        raise ValueError(f"task {n} is bad")
    return n


def die_on_five(n: int) -> int:
    if n == 5:
        os._exit(3)  # a worker that dies without a word
    return n


def slow(n: int) -> int:
    time.sleep(0.05)
    return n


@pytest.mark.parametrize(("jobs", "chunk"), [(1, 1), (2, 1), (2, 4), (3, 50)])
def test_every_task_gives_its_result_once(jobs, chunk):
    assert sorted(imap_unordered(square, range(40), jobs, chunk=chunk)) == [
        n * n for n in range(40)]


def test_no_task_no_result():
    assert list(imap_unordered(square, [], 2)) == []


def test_an_exception_in_a_task_is_raised_in_the_parent():
    with pytest.raises(ValueError, match="task 7 is bad"):
        list(imap_unordered(fail_on_seven, range(20), 2))
    assert multiprocessing.active_children() == []


def test_a_worker_that_dies_is_reported_not_waited_for():
    with pytest.raises(WorkerFailed, match="exit status 3"):
        list(imap_unordered(die_on_five, range(20), 2))
    assert multiprocessing.active_children() == []


def test_stopping_early_kills_the_workers_at_once():
    results = imap_unordered(slow, range(1000), 2, chunk=10)
    assert next(results) in range(1000)
    started = time.monotonic()
    results.close()  # what a stop does: GeneratorExit at the yield
    assert time.monotonic() - started < 5  # 1,000 × 50 ms of work were left: it did not wait
    assert multiprocessing.active_children() == []


# A list the parent fills after the workers started: a forked worker never sees it.
LATE: list[int] = []


def late_length(_: int) -> int:
    return len(LATE)


def test_workers_started_first_do_not_hold_what_the_parent_reads_afterwards():
    with Workers(late_length, 2) as pool:
        LATE.extend(range(1000))  # what a batch does with the sites after starting its workers
        try:
            assert list(pool.imap_unordered(range(6), chunk=2)) == [0] * 6
        finally:
            LATE.clear()
    assert multiprocessing.active_children() == []


def test_leaving_the_block_before_any_run_stops_the_workers():
    with pytest.raises(ValueError, match="bad sites file"), Workers(square, 2):
        assert len(multiprocessing.active_children()) == 2
        raise ValueError("bad sites file")  # a batch whose sites file is refused
    assert multiprocessing.active_children() == []


# A parent that starts three workers, gives each a chunk to finish, says their process ids and
# waits: the test then kills it outright, as the system does when memory runs out.
_KILLED_PARENT = """
import sys, time
from tokenfactory_xl.portfolio.workers import Workers
sys.path.insert(0, sys.argv[1])
from test_workers import slow
with Workers(slow, 3) as pool:
    results = pool.imap_unordered(range(6), chunk=2)
    next(results)
    print(*(p.pid for p in pool._workers.values()), flush=True)
    time.sleep(600)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="no SIGKILL; workers are spawned there")
def test_workers_leave_when_their_parent_is_killed():
    import signal
    import subprocess
    from pathlib import Path

    parent = subprocess.Popen([sys.executable, "-c", _KILLED_PARENT, str(Path(__file__).parent)],
                              stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    try:
        pids = [int(pid) for pid in parent.stdout.readline().split()]
        assert len(pids) == 3
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        parent.stdout.close()

    def alive(pid: int) -> bool:
        if not os.path.isdir("/proc"):  # macOS: an orphan's end is reaped at once
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return False
            return True
        try:
            with open(f"/proc/{pid}/stat") as stat:  # a zombie has left, waiting to be reaped
                return stat.read().rpartition(")")[2].split()[0] != "Z"
        except FileNotFoundError:
            return False

    deadline = time.monotonic() + 60
    while any(map(alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [pid for pid in pids if alive(pid)]
    for pid in left:  # not to leave them behind when the test fails
        os.kill(pid, signal.SIGKILL)
    assert not left, f"workers {left} still ran after their parent was killed"


@pytest.mark.parametrize("jobs", [1, 2, 3, 8])
def test_the_passes_take_every_item_once_in_order_and_end_small(jobs):
    for most in (1, 16):
        for count in (*range(0, 40), 99, 300, 1001):
            parts = passes(count, jobs, most)
            assert [i for part in parts for i in part] == list(range(count))
            assert all(1 <= len(part) <= most for part in parts)
            if jobs == 1:
                assert all(len(part) == most for part in parts[:-1])
            elif count >= 4 * jobs * most:
                # the last pass of each worker is a single item: the workers end together
                assert [len(part) for part in parts[-jobs:]] == [1] * jobs
