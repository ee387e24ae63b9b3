"""The ``agentrig`` command line."""

from __future__ import annotations

import typer

app = typer.Typer(help="agentrig: run and check agent scenario suites.", no_args_is_help=True)


@app.command()
def version() -> None:
    """Print the agentrig version."""
    from agentrig import __version__

    typer.echo(__version__)


def main() -> None:
    """Entry point of the ``agentrig`` script."""
    app()
