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
def no_collection(*, settle: bool = False) -> Iterator[None]:
    """No cyclic collection inside the block. `settle`: then move every object alive straight
    into the oldest generation (`gc.freeze` then `gc.unfreeze`), for objects that live on (an
    opened store): the collector would otherwise walk all of them in its young generations on
    the first answers (~0.1-0.3 s on a large store), and they stay collectable (a store opened
    and dropped again leaves no garbage behind).

    >>> with no_collection():
    ...     gc.isenabled()
    False
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if settle:
            gc.freeze()
            gc.unfreeze()
        if enabled:
            gc.enable()
