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
called without a collection first: start-up's own full passes have just run (a dozen, as
the imports grew the heap), and a forced one would cost the first answer ~200 ms. What
start-up left as cyclic garbage since its last pass stays (a few KB); nothing later does.

Entry points only (`python app.py` and the model worker): a test process that imports the
app keeps its collector as it is.
"""

from __future__ import annotations

import gc
import logging

__all__ = ["freeze"]

_log = logging.getLogger(__name__)


def freeze(process: str) -> int:
    """Freeze what this process has tracked so far; the number of objects now frozen."""
    gc.freeze()
    frozen = gc.get_freeze_count()
    _log.debug("%s: %d start-up objects out of the collector's full passes", process, frozen)
    return frozen
