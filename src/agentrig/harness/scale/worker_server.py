"""The last module the worker server (the process a local cluster's workers are forked from,
:func:`~agentrig.harness.scale.cluster.start_worker_server`) imports. In that process alone
(:data:`SERVER_VARIABLE` set by its starter, and taken out here), once the others are imported:

- Ctrl-C is ignored, by the server and by every worker forked from it (each gets the server's
  handler back). Ctrl-C at a terminal reaches the whole process group: the run's own process
  takes it and stops the cluster; a worker that took it too would cancel its event loop and
  wait for its running tasks before closing.
- What the imports made is frozen out of the collector: the server's exit, when the run's
  process ends, no longer makes a full collection of a heap holding Dask and agentrig
  (0.15-0.5 s, and the run's output stays open until it is over), nor does a worker's.
"""

from __future__ import annotations

import gc
import os
import signal

__all__ = ["SERVER_VARIABLE"]

SERVER_VARIABLE = "AGENTRIG_WORKER_SERVER"
"""Set (to ``1``) in the environment the worker server starts with."""

if os.environ.pop(SERVER_VARIABLE, None) == "1":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.freeze()
