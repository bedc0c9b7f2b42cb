"""Dynamic batching: requests that arrive together for one model's pipeline are run as one batch.

A request waits in a bounded queue. The batcher takes the first one and then, for at most ``max_wait``
seconds, keeps taking the requests that arrive until the batch holds ``max_batch_size`` inputs. Requests
with the same options (top_k, normalize, …) go into one call of the pipeline, which returns one output
per input (or the exception an input raised, which becomes its request's answer). The outputs are then
split back, in order, to the requests they came from.

A full queue refuses the request at once (``Overloaded``, answered 503 with Retry-After): memory does not
grow with the load. A request that waits longer than its timeout is dropped from the batch it would have
joined (``asyncio.TimeoutError``, answered 504). With ``max_batch_size=1`` and ``max_wait=0`` every
request runs alone (the server without dynamic batching, for comparison).

The model runs in one worker thread shared by every batcher of the server. On a CPU, torch's intra-op
threads already use every core, so running two batches at once would only make both slower. After a batch
the worker hands the heap's free pages back to the system, at most once a second (``HeapTrim``).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from itertools import groupby


class HeapTrim:
    """glibc's ``malloc_trim(0)``, at most every ``every`` seconds. Each new mix of batch shapes frees
    activations of a few MiB whose space glibc keeps in its heap (it raises its mmap threshold as large blocks
    are freed), and the heap's free space fragments: a server's resident memory crept up by 0.3 GB over
    9,600 requests of the load test and was still climbing. Trimming after a batch returns the free pages,
    and the memory stays flat (benchmarks/RESULTS.md); once a second costs nothing measurable. Does nothing
    where the C library has no malloc_trim."""

    def __init__(self, every: float = 1.0) -> None:
        self.every, self.last = every, float("-inf")
        try:
            self.trim = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
        except (OSError, AttributeError):
            self.trim = None

    def __call__(self, force: bool = False) -> bool:
        """Trim if the last trim is ``every`` seconds old (or ``force``); whether it trimmed."""
        now = time.monotonic()
        if self.trim is None or (now - self.last < self.every and not force):
            return False
        self.last = now
        self.trim(0)
        return True


class Overloaded(Exception):
    """The queue is full: come back later (HTTP 503, Retry-After)."""


@dataclass
class Job:
    items: list  # the request's inputs
    options: tuple  # requests batch together only with equal options
    future: asyncio.Future = field(repr=False)


@dataclass
class BatchStats:
    batches: int = 0
    inputs: int = 0
    refused: int = 0
    timed_out: int = 0
    largest: int = 0


class Batcher:
    """Gathers the concurrent requests of one pipeline of one model into batches; ``run(items, options)``
    computes a batch (in ``executor``) and returns one output per item."""

    def __init__(
        self,
        run: Callable[[list, tuple], list],
        executor: Executor,
        *,
        max_batch_size: int = 32,
        max_wait: float = 0.005,
        max_queue: int = 256,
    ) -> None:
        if max_batch_size < 1 or max_queue < 1 or max_wait < 0:
            raise ValueError("max_batch_size and max_queue: at least 1; max_wait: at least 0")
        self.run, self.executor = run, executor
        self.max_batch_size, self.max_wait, self.max_queue = max_batch_size, max_wait, max_queue
        self.queue: asyncio.Queue[Job] | None = None
        self.worker: asyncio.Task | None = None
        self.stats = BatchStats()

    async def __call__(self, items: list, options: tuple = (), timeout: float | None = None) -> list:
        """The outputs for one request's ``items``, computed in a batch with whatever else is waiting."""
        if self.queue is None:  # made in the server's event loop, on first use
            self.queue = asyncio.Queue(self.max_queue)
            self.worker = asyncio.create_task(self.serve())
        job = Job(list(items), options, asyncio.get_running_loop().create_future())
        try:
            self.queue.put_nowait(job)
        except asyncio.QueueFull:
            self.stats.refused += 1
            raise Overloaded(f"{self.max_queue} requests already waiting") from None
        try:
            return await asyncio.wait_for(job.future, timeout)
        except TimeoutError:
            self.stats.timed_out += 1
            raise

    @property
    def waiting(self) -> int:
        return 0 if self.queue is None else self.queue.qsize()

    async def gather(self) -> list[Job]:
        """The next batch: the first waiting request, then those arriving within max_wait, up to
        max_batch_size inputs; requests already given up on (timed out) are left out."""
        jobs = [await self.queue.get()]
        size = len(jobs[0].items)
        deadline = asyncio.get_running_loop().time() + self.max_wait
        while size < self.max_batch_size:
            left = deadline - asyncio.get_running_loop().time()
            try:
                job = self.queue.get_nowait() if left <= 0 else await asyncio.wait_for(self.queue.get(), left)
            except (asyncio.QueueEmpty, TimeoutError):
                break
            jobs.append(job)
            size += len(job.items)
        return [j for j in jobs if not j.future.done()]

    async def serve(self) -> None:
        while True:
            jobs = await self.gather()
            for _, group in groupby(sorted(jobs, key=lambda j: repr(j.options)), key=lambda j: j.options):
                await self.compute(list(group))

    async def compute(self, group: list[Job]) -> None:
        """Run one batch of requests with equal options and answer each. An input the pipeline refuses is
        its request's answer alone: a batch that fails is run again one request at a time."""
        items = [x for j in group for x in j.items]
        self.stats.batches += 1
        self.stats.inputs += len(items)
        self.stats.largest = max(self.stats.largest, len(items))
        try:
            outputs = await asyncio.get_running_loop().run_in_executor(
                self.executor, self.run, items, group[0].options
            )
        except Exception as e:
            if len(group) > 1:
                for j in group:
                    await self.compute([j])
                return
            if not group[0].future.done():
                group[0].future.set_exception(e)
            return
        start = 0
        for j in group:  # each request gets its own slice, in order
            mine = outputs[start : start + len(j.items)]
            start += len(j.items)
            if j.future.done():
                continue
            failed = next((o for o in mine if isinstance(o, Exception)), None)
            j.future.set_exception(failed) if failed is not None else j.future.set_result(mine)

    async def close(self) -> None:
        if self.worker is not None:
            self.worker.cancel()
