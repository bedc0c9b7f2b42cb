"""Dynamic batching on a fake pipeline that records its calls: concurrent requests are gathered into one
call, up to max_batch_size inputs, only with equal options; each request gets its own outputs back; a full
queue refuses at once; a request past its timeout is left out of the batch."""

import asyncio
import os
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from seq2bert.serve.batching import Batcher, HeapTrim, Overloaded


class Recorder:
    def __init__(self, delay=0.0):
        self.calls, self.delay = [], delay

    def __call__(self, items, options):
        self.calls.append((list(items), options))
        time.sleep(self.delay)
        return [ValueError(x) if x == "bad" else f"{x}{dict(options).get('suffix', '')}" for x in items]


def run(coroutine):
    return asyncio.run(coroutine)


def test_concurrent_requests_become_one_batch_and_each_gets_its_outputs():
    record = Recorder()

    async def main():
        batcher = Batcher(record, ThreadPoolExecutor(1), max_batch_size=32, max_wait=0.05)
        requests = [[f"{i}a", f"{i}b"] if i % 2 else [f"{i}a"] for i in range(10)]
        out = await asyncio.gather(*(batcher(r) for r in requests))
        await batcher.close()
        return requests, out

    requests, out = run(main())
    assert out == requests  # each request its own inputs' outputs, in order
    assert len(record.calls) == 1 and len(record.calls[0][0]) == 15


def test_a_batch_stops_at_max_batch_size_and_options_never_mix():
    record = Recorder(delay=0.01)

    async def main():
        batcher = Batcher(record, ThreadPoolExecutor(1), max_batch_size=4, max_wait=0.05)
        jobs = [batcher([f"x{i}"], (("suffix", "!" if i % 2 else "?"),)) for i in range(12)]
        out = await asyncio.gather(*jobs)
        await batcher.close()
        return out, batcher.stats

    out, stats = run(main())
    assert out == [[f"x{i}{'!' if i % 2 else '?'}"] for i in range(12)]
    assert all(len(items) <= 4 for items, _ in record.calls)
    for items, options in record.calls:  # one kind of options per call
        assert {int(x[1:]) % 2 for x in items} == {1 if dict(options)["suffix"] == "!" else 0}
    assert stats.inputs == 12 and stats.largest <= 4


def test_without_batching_each_request_runs_alone():
    record = Recorder()

    async def main():
        batcher = Batcher(record, ThreadPoolExecutor(1), max_batch_size=1, max_wait=0)
        await asyncio.gather(*(batcher([i]) for i in range(5)))
        await batcher.close()

    run(main())
    assert [items for items, _ in record.calls] == [[i] for i in range(5)]


def test_a_refused_input_fails_its_request_and_a_failed_batch_is_retried_per_request():
    def picky(items, options):
        if "boom" in items:
            raise RuntimeError("boom")
        return Recorder()(items, options)

    async def main():
        batcher = Batcher(picky, ThreadPoolExecutor(1), max_batch_size=8, max_wait=0.05)
        out = await asyncio.gather(batcher(["a"]), batcher(["bad"]), batcher(["boom"]), batcher(["b"]),
                                   return_exceptions=True)  # fmt: skip
        await batcher.close()
        return out

    a, bad, boom, b = run(main())
    assert a == ["a"] and b == ["b"]
    assert isinstance(bad, ValueError) and isinstance(boom, RuntimeError)


def test_a_full_queue_refuses_at_once_and_a_timed_out_request_is_skipped():
    record = Recorder(delay=0.2)

    async def main():
        batcher = Batcher(record, ThreadPoolExecutor(1), max_batch_size=1, max_wait=0, max_queue=2)
        first = asyncio.create_task(batcher(["first"]))
        await asyncio.sleep(0.05)  # running now: the queue is empty again
        waiting = [asyncio.create_task(batcher([f"w{i}"], timeout=0.1)) for i in range(2)]
        await asyncio.sleep(0)
        with pytest.raises(Overloaded):
            await batcher(["one too many"])
        results = await asyncio.gather(first, *waiting, return_exceptions=True)
        await asyncio.sleep(0.5)  # the worker reaches the timed-out requests: skipped, not run
        await batcher.close()
        return results, batcher.stats

    (first, *waiting), stats = run(main())
    assert first == ["first"]
    assert all(isinstance(w, TimeoutError) for w in waiting)
    assert [items for items, _ in record.calls] == [["first"]]
    assert stats.refused == 1 and stats.timed_out == 2


def test_settings_out_of_range_are_refused():
    with pytest.raises(ValueError):
        Batcher(Recorder(), ThreadPoolExecutor(1), max_batch_size=0)
    with pytest.raises(ValueError):
        Batcher(Recorder(), ThreadPoolExecutor(1), max_wait=-1)


def resident_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads the resident size from /proc")
def test_heap_trim_hands_freed_heap_pages_back_at_most_every_so_often():
    trim = HeapTrim(every=3600)
    if trim.trim is None:
        pytest.skip("the C library has no malloc_trim")
    # 64 KiB blocks come from the heap; freeing all but the last leaves 200 MiB of free heap below it, which
    # glibc keeps (it only returns free space at the heap's top by itself)
    blocks = [bytearray(64 * 1024) for _ in range(3200)]
    last = blocks[-1]
    del blocks
    before = resident_mb()
    assert trim()  # the first call trims
    after = resident_mb()
    assert before - after > 100, (before, after)
    assert not trim()  # and the next, within the hour, does not
    assert len(last) == 64 * 1024
