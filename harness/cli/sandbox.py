"""`agentrel sandbox ...`: start, inspect, reset and dump the Postgres sandbox."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from agentrel.harness.cli.errors import ExitCode
from agentrel.harness.cli.options import Backend, Dsn, EnvName, Image, Scale, Seed, chosen_environment
from agentrel.harness.errors import EnvironmentFailure, UsageError, UserError
from agentrel.sandbox.defaults import DEFAULT_SEED

app = typer.Typer(help="Start, inspect, reset and dump the Postgres sandbox.", no_args_is_help=True)
image_app = typer.Typer(
    help="The docker backend's image, built offline from Debian packages.", no_args_is_help=True
)
app.add_typer(image_app, name="image")
out = Console()


@contextmanager
def sandbox_errors() -> Iterator[None]:
    """Turn sandbox failures into one clear line with the environment exit code."""
    from agentrel.sandbox.servers import SandboxError

    try:
        yield
    except SandboxError as exc:
        raise EnvironmentFailure(str(exc)) from None


def _open(
    dsn: str | None,
    backend: str | None,
    seed: str = DEFAULT_SEED,
    scale: int = 1,
    image: str | None = None,
    env: str | None = None,
):
    from agentrel.sandbox.sandbox import Sandbox

    environment = chosen_environment(env)
    return Sandbox.open(dsn, backend, seed=seed, scale=scale, image=image, env=environment)


@app.command()
def up(
    dsn: Dsn = None,
    backend: Backend = None,
    seed: Seed = DEFAULT_SEED,
    scale: Scale = 1,
    image: Image = None,
    env: EnvName = None,
) -> None:
    """Start the server (if needed) and build the seed template."""
    with sandbox_errors(), out.status("building the seed template"):
        sb = _open(dsn, backend, seed, scale, image, env)
        tpl = sb.seed_template()
    out.print(f"sandbox up: {sb.server.name} server, environment {sb.env.name}, seed template {tpl.name}")
    out.print(f"seed digest {tpl.digest}")


@app.command()
def status(
    dsn: Dsn = None,
    backend: Backend = None,
    image: Image = None,
    env: EnvName = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Show the backend, its location and version, the seed digest and the databases.

    The seed digest is the selected environment's (`--env`); when other environments have seed templates
    on the server too, each one's digest follows on a line of its own (`seed_digests` in --json).

    Exits 3 when the server is not running (as `pg_ctl status` does), after printing the table."""
    from agentrel.sandbox.sandbox import Sandbox
    from agentrel.sandbox.servers import resolve_server

    with sandbox_errors():
        sb = Sandbox(resolve_server(dsn, backend, image), env=chosen_environment(env))
        st = sb.status()
    if as_json:
        import json

        typer.echo(
            json.dumps(
                {
                    "backend": st.server.backend,
                    "location": st.server.location,
                    "running": st.server.running,
                    **{str(k): v for k, v in st.server.extra.items()},
                    "server_version": st.version,
                    "seed_digest": st.seed_digest,
                    "seed_digests": st.seed_digests,
                    "templates": len(st.templates),
                    "run_databases": len(st.run_databases),
                },
                indent=1,
            )
        )
        if not st.server.running:
            raise typer.Exit(int(ExitCode.BAD_INPUT))
        return
    table = Table.grid(padding=(0, 2))
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold")
    table.add_row("backend", st.server.backend)
    table.add_row("location", st.server.location)
    table.add_row("running", "yes" if st.server.running else "no")
    for key, value in st.server.extra.items():
        table.add_row(key, value)
    table.add_row("server version", st.version or "-")
    table.add_row("seed digest", st.seed_digest or "-")
    if set(st.seed_digests) - {sb.env.name}:  # another environment has a template: show each one's
        for name, digest in sorted(st.seed_digests.items()):
            table.add_row(f"  {name}", digest)
    table.add_row("templates", str(len(st.templates)))
    table.add_row("run databases", str(len(st.run_databases)))
    out.print(table)
    if not st.server.running:
        raise typer.Exit(int(ExitCode.BAD_INPUT))


@app.command()
def down(dsn: Dsn = None, backend: Backend = None, image: Image = None) -> None:
    """Stop the server (the local cluster or the docker container; never an external server)."""
    from agentrel.sandbox.servers import resolve_server

    with sandbox_errors():
        resolve_server(dsn, backend, image).stop()
    out.print("sandbox down")


@app.command()
def destroy(backend: Backend = None) -> None:
    """Stop the local cluster and delete its files (data directory, RAM run space, password file)."""
    from agentrel.sandbox.servers.local import LocalCluster

    if (backend or "local") != "local":
        raise UsageError("destroy deletes the local cluster only; use `down` for the docker backend")
    with sandbox_errors():
        LocalCluster().destroy()
    out.print("sandbox destroyed")


@app.command()
def reset(dsn: Dsn = None, backend: Backend = None, image: Image = None, env: EnvName = None) -> None:
    """Drop every AgentRel database (templates and runs) and the dump cache; they are rebuilt on next use."""
    with sandbox_errors():
        dropped = _open(dsn, backend, image=image, env=env).reset()
    out.print(f"dropped {len(dropped)} database(s)")


@app.command()
def digest(
    dsn: Dsn = None,
    backend: Backend = None,
    seed: Seed = DEFAULT_SEED,
    scale: Scale = 1,
    image: Image = None,
    env: EnvName = None,
) -> None:
    """Print the seed digest: SHA-256 of the full-state dump of the seeded database."""
    with sandbox_errors():
        tpl = _open(dsn, backend, seed, scale, image, env).seed_template()
    typer.echo(tpl.digest)


@app.command()
def dump(
    dbname: Annotated[str, typer.Argument(help="Database to dump (e.g. a run or template database).")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write the gzipped JSONL dump.")],
    dsn: Dsn = None,
    backend: Backend = None,
    image: Image = None,
    env: EnvName = None,
) -> None:
    """Write a full-state dump of DBNAME; print its digest."""

    with sandbox_errors():
        sb = _open(dsn, backend, image=image, env=env)
        if not sb.dbs.exists(dbname):
            raise UserError(
                f"no database named {dbname!r} on the {sb.server.name} server; "
                "`agentrel sandbox status` lists them"
            )
        state = sb.dbs.dump(dbname)  # a template through a clone: templates take no connections
    try:
        digest_ = state.save(output)
    except OSError as exc:
        raise UserError(f"cannot write {output}: {exc.strerror}") from None
    out.print(f"wrote {output} ({state.row_count()} rows) digest {digest_}")


@image_app.command("build")
def image_build(
    rebuild: Annotated[
        bool, typer.Option("--rebuild", help="Build even when the engine has this build already.")
    ] = False,
) -> None:
    """Build the sandbox image offline: debootstrap of the host's release with its Postgres, loaded into
    the local Docker engine. Prints the image's content id (sha256:…), for --image / AGENTREL_DOCKER_IMAGE."""
    from agentrel.sandbox.image.build import build

    err = Console(stderr=True)
    with sandbox_errors(), err.status("building the sandbox image (debootstrap: minutes the first time)"):
        built = build(rebuild=rebuild)
    how = "cached" if built.cached else "built"
    err.print(
        f"{how} {built.tag}: postgresql {built.postgres}, packages {built.packages_digest[:12]}",
        soft_wrap=True,
    )
    typer.echo(built.image_id)  # alone on stdout, for AGENTREL_DOCKER_IMAGE=$(agentrel sandbox image build)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="sandbox")
