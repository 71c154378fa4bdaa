"""The sandbox facade the CLI and the harness use: one server, its databases, and the dump cache."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agentrel.sandbox.databases import DEFAULT_SEED, Databases, Template
from agentrel.sandbox.environments.contract import Environment
from agentrel.sandbox.servers import SandboxError, Server, ServerInfo, resolve_server, server_version
from agentrel.sandbox.servers.local import default_home

__all__ = ["Sandbox", "SandboxError", "SandboxStatus"]


@dataclass(frozen=True)
class SandboxStatus:
    server: ServerInfo
    version: str | None
    seed_digest: str | None
    templates: list[str]
    run_databases: list[str]
    # Each installed environment whose seed template (this sandbox's seed and scale) is on the server.
    seed_digests: dict[str, str] = field(default_factory=dict)


class Sandbox:
    def __init__(
        self,
        server: Server,
        home: Path | None = None,
        seed: str = DEFAULT_SEED,
        scale: int = 1,
        env: Environment | None = None,
    ) -> None:
        if scale < 1:
            raise SandboxError(f"--scale must be a positive integer, got {scale}")
        if env is None:
            from agentrel.sandbox.environments.registry import default

            env = default()  # an environment is handed down; none named is the built-in
        self.server = server
        self.home = home or default_home()
        self.seed = seed
        self.scale = scale
        self.env = env  # what the templates are built from (sandbox/environments/)
        self.dbs = Databases(server, env, cache_dir=self.home / "dumps")

    @classmethod
    def open(
        cls,
        dsn: str | None = None,
        backend: str | None = None,
        seed: str = DEFAULT_SEED,
        scale: int = 1,
        image: str | None = None,
        env: Environment | None = None,
    ) -> Sandbox:
        """Resolve the backend, start it if needed, and drop run databases orphaned by earlier crashes."""
        sandbox = cls(resolve_server(dsn, backend, image), seed=seed, scale=scale, env=env)
        sandbox.server.ensure_running()
        sandbox.dbs.drop_orphans()
        return sandbox

    def seed_template(self) -> Template:
        return self.dbs.seed_template(self.seed, self.scale)

    def checked_seed_digest(self) -> str:
        """The seed template's digest computed from its content now, not the one recorded at its build
        (which a change made out of band leaves as it was); a changed template is rebuilt first, so this is
        the digest runs start from."""
        self.dbs.forget_check(self.dbs.seed_name(self.seed, self.scale))
        tpl = self.seed_template()
        digest = self.dbs.computed_digest(tpl.name)
        if digest is None:  # another process published it between our check and our build
            self.dbs.forget_check(tpl.name)
            tpl = self.seed_template()
            digest = self.dbs.computed_digest(tpl.name)
        if digest is None:
            raise SandboxError(f"template {tpl.name} could not be checked: run `agentrel sandbox reset`")
        return digest

    def version(self) -> str:
        """The server's `version()`, and on the docker backend the image's content id after it: the
        manifest records this string, so a different image is a different protocol (no resume across
        images, no silent pooling of their runs)."""
        version = server_version(self.server)
        image = getattr(self.server, "image_id", None)
        return f"{version}; image {image}" if image else version

    def status(self) -> SandboxStatus:
        info = self.server.info()
        if not info.running:
            return SandboxStatus(info, None, None, [], [])
        names = self.dbs.names()
        seeds = [n for n in names if n.startswith("agentrel_seed_")]
        by_env, attributed = self._seed_digests(set(seeds))
        # This environment's template; else, as before environments, the one seed template there is,
        # unless it is another environment's (or one of another seed or scale, which names none).
        other = [n for n in seeds if n not in attributed]
        digest = by_env.get(self.env.name)
        if digest is None and not by_env and len(other) == 1:
            digest = self.dbs.comment(other[0])
        return SandboxStatus(
            server=info,
            version=self.version(),
            seed_digest=digest,
            templates=[n for n in names if not n.startswith("agentrel_run_")],
            run_databases=[n for n in names if n.startswith("agentrel_run_")],
            seed_digests=by_env,
        )

    def _seed_digests(self, seeds: set[str]) -> tuple[dict[str, str], set[str]]:
        """Environment name -> its seed template's digest, for each installed environment whose
        template name (which hashes its fingerprint) is among `seeds`, and those names. An environment
        that fails to load has no template to show here (`agentrel env list` says why)."""
        from agentrel.sandbox.environments import registry

        found: dict[str, str] = {}
        attributed: set[str] = set()
        for name in registry.names():
            try:
                env = self.env if name == self.env.name else registry.load(name)
                db = self.dbs.seed_name(self.seed, self.scale, env)
            except SandboxError:
                continue
            digest = self.dbs.comment(db) if db in seeds else None
            if digest:
                found[name] = digest
                attributed.add(db)
        return found, attributed

    def reset(self) -> list[str]:
        dropped = self.dbs.drop_all()
        cache = self.home / "dumps"
        if cache.is_dir():
            for f in cache.glob("*.jsonl.gz"):
                f.unlink()
        return dropped
