"""Start-up's objects out of the garbage collector's full passes (`gc.freeze`).

A full (oldest-generation) collection walks every tracked container in the process. After
start-up that is gradio's and FastAPI's modules, classes and schemas in the server and
litellm's in the model worker: ~0.7 M and ~0.4 M objects that live as long as the
process. Measured here (ten runs streaming at once, offline model at 20 ms a token): a full
pass took 175 ms in the server and ~200 ms in the model worker, and each stalled every
stream at once (the worker's held up every stream's next word): three of eight rounds had
all ten streams wait ~200 ms at the same update, which alone set the event gap's p99.

`gc.freeze()` moves every object tracked so far into the permanent generation, which no
later collection walks; what runs create afterwards is collected as before. It is O(1) and
called without a collection first (a forced one would cost the first answer ~200 ms).

Start-up itself runs no full pass either (`hold`, until `freeze`): as the imports grew the
heap, the collector ran one every few hundred thousand new objects, each walking all of
them, and found nearly nothing to free (traced: the model worker's import of litellm ran
seven, 47-201 ms each, 0.9 s of its 3.3 s; the server one of 186 ms right before its first
turn; each freed 0-735 objects). The young generations are still collected meanwhile: they
free the imports' short-lived cycles (with no collection at all, start-up kept 6 MB more).
What start-up leaves as cyclic garbage in the old generation stays (a few KB); nothing
later does.

Entry points only (`python app.py` and the model worker): a test process that imports the
app keeps its collector as it is.
"""

from __future__ import annotations

import gc
import logging

__all__ = ["freeze", "hold", "holding"]

_log = logging.getLogger(__name__)


_NEVER = 1 << 30  # an oldest-generation threshold no count of young passes reaches
_held: tuple[int, int, int] | None = None  # the thresholds `hold` replaced


def hold() -> None:
    """No full pass from now until `freeze` (an entry point's start-up: what its imports
    build lives as long as the process); the young generations are collected as before."""
    global _held
    if _held is None:
        _held = gc.get_threshold()
        gc.set_threshold(_held[0], _held[1], _NEVER)


def holding() -> bool:
    """Whether full passes are held off (`hold` without `freeze` yet)."""
    return _held is not None


def freeze(process: str) -> int:
    """Freeze what this process has tracked so far, then collect as before `hold`; the
    number of objects now frozen."""
    global _held
    gc.freeze()
    if _held is not None:
        gc.set_threshold(*_held)
        _held = None
    frozen = gc.get_freeze_count()
    _log.debug("%s: %d start-up objects out of the collector's full passes", process, frozen)
    return frozen
