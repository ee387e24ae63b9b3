"""Scale-out: scripted suites and live trials on a Dask cluster (``agentrig run --executor
dask`` or ``dask://HOST:PORT``; the ``dask`` extra). One scenario, or one live trial, is one task;
the results come back to this process, which alone writes the reports and the trial cache.
Per-provider caps and the budgets hold across the cluster. See docs/scale-out.md."""

from agentrig.harness.scale.cluster import DaskExecutor, dask_client, parse_executor
from agentrig.harness.scale.control import ClusterLimits
from agentrig.harness.scale.session import dask_session
from agentrig.harness.scale.suite import run_scenario_on_dask, run_suite_on_dask
from agentrig.harness.scale.trials import DaskTrials

__all__ = [
    "ClusterLimits",
    "DaskExecutor",
    "DaskTrials",
    "dask_client",
    "dask_session",
    "parse_executor",
    "run_scenario_on_dask",
    "run_suite_on_dask",
]
