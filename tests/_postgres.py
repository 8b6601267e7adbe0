"""A real PostgreSQL server for the tests: its own cluster (initdb in a temporary folder, a free port on 127.0.0.1),
started once per session and stopped at its end. Where none can be started, `start_cluster` says why (a skip)."""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path


class NoServer(Exception):
    """Why no PostgreSQL server can be started here (the reason a skip prints)."""


def find_bindir() -> Path:
    """Where initdb and pg_ctl are: `pg_config --bindir`, else Debian's /usr/lib/postgresql/*/bin, else PATH."""
    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, timeout=10).stdout.strip()
            if out:
                candidates.append(Path(out))
        except (OSError, subprocess.SubprocessError):
            pass
    # Debian's server package keeps its binaries off PATH, one folder per major version: the newest first.
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True)
    candidates += [Path(p) for p in versions]
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(Path(initdb).resolve().parent)
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
    raise NoServer(
        "no PostgreSQL server binaries (initdb, pg_ctl): neither `pg_config --bindir`, /usr/lib/postgresql/*/bin nor "
        "PATH has them (apt-get install -y postgresql)"
    )


def _server_user() -> str | None:
    """initdb refuses to run as root: as root, the cluster belongs to an unprivileged user (postgres, else nobody)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise NoServer("running as root and there is no unprivileged user (postgres, nobody) to own a cluster")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    """A running test cluster: a superuser with a password, reached over TCP on 127.0.0.1 only."""

    bindir: Path
    folder: Path
    port: int
    user: str
    password: str
    run_as: str | None
    _databases: count[int] = field(default_factory=count)

    def url(self, database: str = "postgres", *, password: bool = True) -> str:
        secret = f":{self.password}" if password else ""
        return f"postgresql://{self.user}{secret}@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A new empty database (each test its own, so no test sees another's rows); its name."""
        import psycopg

        name = f"t{os.getpid()}_{next(self._databases)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return name

    def drop_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        _run(self, [str(self.bindir / "pg_ctl"), "stop", "-D", str(self.folder / "data"), "-m", "immediate", "-w"])
        shutil.rmtree(self.folder, ignore_errors=True)


def _run(cluster_or_user: Cluster | str | None, argv: list[str], timeout: float = 60) -> None:
    run_as = cluster_or_user.run_as if isinstance(cluster_or_user, Cluster) else cluster_or_user
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, user=run_as)
    if done.returncode != 0:
        raise NoServer(f"{Path(argv[0]).name} {argv[1]} failed (exit {done.returncode}): {done.stderr.strip()[-500:]}")


# The tests' server trades durability for speed; a benchmark of commits passes fsync=on back.
TEST_SETTINGS = {"fsync": "off", "max_connections": "200"}


def start_cluster(settings: dict[str, str] | None = None) -> Cluster:
    """initdb, then pg_ctl start on a free port with `settings` over TEST_SETTINGS (server -c options); the caller
    stops it (Cluster.stop)."""
    bindir = find_bindir()
    run_as = _server_user()
    folder = Path(tempfile.mkdtemp(prefix="sherpa-pg-"))
    if run_as is not None:
        entry = pwd.getpwnam(run_as)
        os.chown(folder, entry.pw_uid, entry.pw_gid)
    password = secrets.token_hex(12)
    (folder / "pw").write_text(password + "\n")
    if run_as is not None:
        os.chown(folder / "pw", pwd.getpwnam(run_as).pw_uid, -1)
    try:
        # Passwords over TCP (the tests of wrong credentials need them checked), trust on the cluster's own socket.
        _run(
            run_as,
            [
                str(bindir / "initdb"),
                "-D",
                str(folder / "data"),
                "-U",
                "postgres",
                f"--pwfile={folder / 'pw'}",
                "--auth-host=scram-sha-256",
                "--auth-local=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
        )
        port = _free_port()
        cluster = Cluster(bindir, folder, port, "postgres", password, run_as)
        chosen = {**TEST_SETTINGS, **(settings or {}), "listen_addresses": "127.0.0.1"}
        options = f"-p {port} -k {folder} " + " ".join(f"-c {name}={value}" for name, value in chosen.items())
        _run(
            cluster,
            [
                str(bindir / "pg_ctl"),
                "start",
                "-D",
                str(folder / "data"),
                "-w",
                "-t",
                "60",
                "-l",
                str(folder / "server.log"),
                "-o",
                options,
            ],
            timeout=90,
        )
    except (NoServer, OSError, subprocess.SubprocessError) as exc:
        log = folder / "server.log"
        tail = log.read_text(errors="replace")[-500:] if log.exists() else ""
        shutil.rmtree(folder, ignore_errors=True)
        raise NoServer(f"{exc}{' | server log: ' + tail if tail else ''}") from None
    _wait_ready(cluster)
    return cluster


def _wait_ready(cluster: Cluster, timeout: float = 30) -> None:
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            with psycopg.connect(cluster.url(), connect_timeout=2):
                return
        except psycopg.OperationalError as exc:
            if time.monotonic() > deadline:
                cluster.stop()
                raise NoServer(f"the test cluster did not answer within {timeout}s: {exc}") from None
            time.sleep(0.1)
