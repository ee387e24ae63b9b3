"""The end of a process whose program is agentrig's command, or pytest collecting scenarios.

CPython ends a process with a full garbage collection, which visits every object the process
still holds: for a suite of 1,000 scenarios (the models, their results, the pytest items), about
0.9 CPU s spent on what is about to be dropped anyway. Frozen (``gc.freeze``), those objects
are left out of it; they are still freed by reference counting. Only reference cycles left at
exit go unfinalized, which CPython never promises to finalize.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys

__all__ = ["end_without_a_last_collection", "freeze_at_exit_of_pytest"]


def end_without_a_last_collection() -> None:
    """Freeze every object the process holds: call it as the program's last step."""
    gc.freeze()


def freeze_at_exit_of_pytest() -> None:
    """When pytest is this process's program (``pytest``, ``py.test``, ``python -m pytest``),
    freeze every object at its exit, after pytest's own cleanup (``atexit``); a pytest run
    inside another program (``pytest.main``) leaves that program's collector as it was."""
    if _pytest_is_the_program():
        # once, however many sessions end in this process
        atexit.unregister(end_without_a_last_collection)
        atexit.register(end_without_a_last_collection)


def _pytest_is_the_program() -> bool:
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name in ("pytest", "pytest.__main__"):
        return True
    program = os.path.basename(sys.argv[0]) if sys.argv else ""
    return os.path.splitext(program)[0] in ("pytest", "py.test")
