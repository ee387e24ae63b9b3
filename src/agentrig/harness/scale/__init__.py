"""Scale-out: scripted suites and live trials on a Dask cluster (``agentrig run --executor
dask`` or ``dask://HOST:PORT``; the ``dask`` extra). One scenario, or one live trial, is one task;
the results come back to this process, which alone writes the reports and the trial cache.
Per-provider caps and the budgets hold across the cluster. See docs/scale-out.md."""
