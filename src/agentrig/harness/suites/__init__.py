"""Run a suite of scenarios: in this process or in a pool of worker processes (which hold
Ctrl-C back while they start), with plugin modules imported first."""
