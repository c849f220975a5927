"""A check that what a block made of anyio's memory object streams was closed: anyio warns
(`ResourceWarning: Unclosed <MemoryObjectReceiveStream ...>`) when one is garbage collected
unclosed, which Python hides by default and a test run shows only at random, in a later test."""

from __future__ import annotations

import gc
import warnings
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def no_unclosed_streams() -> Iterator[None]:
    """Fail when a memory object stream made in the block is collected unclosed (by the end of it)."""
    gc.collect()  # the garbage of earlier tests, unheard
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        yield
        gc.collect()
    unclosed = [str(w.message) for w in caught if w.category is ResourceWarning and "MemoryObject" in str(w.message)]
    assert not unclosed, f"collected unclosed: {unclosed}"
