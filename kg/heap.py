"""Building a store's objects without the cyclic garbage collector walking them again and again.

Opening or writing a large store makes about a million objects that live on (units, entities,
relations, evidence). Each time the heap grows by a quarter the collector walks all of it: a
third of the time to open a 230-document store, and a tenth of a second at random moments of
a re-ingest. Nothing made there is cyclic garbage worth collecting meanwhile.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["no_collection"]


@contextmanager
def no_collection(*, freeze: bool = False) -> Iterator[None]:
    """No cyclic collection inside the block. `freeze`: then move every object alive out of the
    collector's sight (`gc.freeze`), for objects that live as long as the process's use of them
    (an opened store): a full collection walked them all again on the first answers. What is
    frozen is still freed when nothing refers to it; only cycles among frozen objects outlive
    their use.

    >>> with no_collection():
    ...     gc.isenabled()
    False
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if enabled:
            gc.enable()
