"""The last module the worker server (the process worker processes are forked from,
:func:`~agentrig.harness.suites.worker_start.start_worker_server`) imports. In that process
alone (:data:`SERVER_VARIABLE` set by its starter, and taken out here), once the others are
imported:

- Ctrl-C is ignored, by the server and by every worker forked from it (each gets the server's
  handler back). Ctrl-C at a terminal reaches the whole process group: the run's own process
  takes it and stops its workers; a Dask worker that took it too would cancel its event loop
  and wait for its running tasks before closing.
- SIGTERM and SIGHUP are ignored by the server (not by its workers: each forked one gets the
  default back, and a pool worker then sets its own). A signal to the whole group, as a CI
  runner sends, is the run's process's to handle; the server ends with that process anyway
  (multiprocessing closes it when its starter exits), and one that ended first would leave
  the pool's workers orphaned and ending on the same signal, as if they had crashed.
- What the imports made is frozen out of the collector: the server's exit, when the run's
  process ends, no longer makes a full collection of a heap holding agentrig (and Dask) (0.15-0.5
  s, and the run's output stays open until it is over), nor does a worker's.
"""

from __future__ import annotations

import gc
import os
import signal

__all__ = ["SERVER_VARIABLE"]

SERVER_VARIABLE = "AGENTRIG_WORKER_SERVER"
"""Set (to ``1``) in the environment the worker server starts with."""


def _default_stop_signals() -> None:
    """In a worker just forked from the server: SIGTERM and SIGHUP end it, as in any process."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


if os.environ.pop(SERVER_VARIABLE, None) == "1":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    os.register_at_fork(after_in_child=_default_stop_signals)
    gc.freeze()
