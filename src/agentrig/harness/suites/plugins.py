"""Import plugin modules: modules that register invariants or report writers when imported."""

from __future__ import annotations

from collections.abc import Iterable

from agentrig.errors import AgentrigError
from agentrig.harness.errors import PluginError
from agentrig.harness.scenarios.user_code import (
    describe_failure,
    import_user_module,
    is_missing_itself,
)

__all__ = ["load_plugins"]


def load_plugins(modules: Iterable[str]) -> None:
    """Import modules that register invariants or report writers; raises
    :class:`~agentrig.harness.errors.PluginError` naming the module and what failed."""
    for module in modules:
        try:
            import_user_module(module)
        except ModuleNotFoundError as error:
            if not is_missing_itself(module, error):  # found; what it imports is missing
                raise PluginError(
                    f"plugin module {module!r} failed to import: {describe_failure(error)}; "
                    f"install {error.name!r} where agentrig runs"
                ) from error
            raise PluginError(
                f"cannot import plugin module {module!r}: {error}; give its dotted import name, "
                "and run agentrig from the folder that holds it or add that folder to PYTHONPATH"
            ) from error
        except AgentrigError:
            raise
        except Exception as error:  # the plugin's own code failed: say where, not a traceback
            raise PluginError(
                f"plugin module {module!r} failed to import: {describe_failure(error)}; "
                "fix the module and run again"
            ) from error
