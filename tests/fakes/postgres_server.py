"""A real, throw-away PostgreSQL server from Debian's ``postgresql`` package, for store tests.

``initdb`` into a fresh temp dir, ``pg_ctl start`` on a free loopback port (and a unix
socket in the same dir), ``pg_ctl stop -m immediate`` and delete at the end. PostgreSQL
refuses to run as root, so under root (CI) the dir is handed to the ``postgres`` system
user (or ``nobody``) and the binaries run through ``runuser``. Host connections need the
password (scram-sha-256), so the tests exercise a URL that carries one.

``fsync=off``: the tests kill *clients*, never the server, so durability across a server
crash is not under test and fsync would only slow the 2-core machine.
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

SUPERUSER = "llm_council"
#: seconds ``pg_ctl start`` may wait for the server: only a hang-catcher
START_WAIT_S = 300
#: ports tried when the probed free port is taken before the server binds it
PORT_ATTEMPTS = 3


def _bin_dir() -> Path | None:
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[4]))
    for candidate in reversed(candidates):
        if Path(candidate, "initdb").exists() and Path(candidate, "pg_ctl").exists():
            return Path(candidate)
    found = shutil.which("pg_ctl")
    return Path(found).parent if found and shutil.which("initdb") else None


def unavailable_reason() -> str | None:
    """Why a server cannot be started here, or None if it can."""
    if _bin_dir() is None:
        return "PostgreSQL server binaries not found (apt-get install postgresql)"
    if os.geteuid() == 0 and _run_as_user() is None:
        return "running as root and no 'postgres' or 'nobody' user to run the server"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root and no runuser(1) to drop privileges"
    return None


def _run_as_user() -> pwd.struct_passwd | None:
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class PostgresServer:
    """A running server; ``url`` connects as the superuser with its password over TCP."""

    directory: Path
    port: int
    password: str
    _user: pwd.struct_passwd | None

    @property
    def url(self) -> str:
        return f"postgresql://{SUPERUSER}:{self.password}@127.0.0.1:{self.port}/postgres"

    def database_url(self, name: str) -> str:
        return f"postgresql://{SUPERUSER}:{self.password}@127.0.0.1:{self.port}/{name}"

    @staticmethod
    def _command(user: pwd.struct_passwd | None, argv: list[str]) -> list[str]:
        return ["runuser", "-u", user.pw_name, "--", *argv] if user is not None else argv

    def _run(self, argv: list[str], timeout_s: float = 600) -> None:
        result = subprocess.run(
            self._command(self._user, argv), capture_output=True, text=True, timeout=timeout_s
        )
        if result.returncode != 0:
            log = self.directory / "server.log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"{argv[0]} failed: {result.stderr.strip()} {tail}")

    @classmethod
    def start(cls) -> PostgresServer:
        reason = unavailable_reason()
        if reason is not None:
            raise RuntimeError(reason)
        bin_dir = _bin_dir()
        assert bin_dir is not None
        user = _run_as_user() if os.geteuid() == 0 else None
        directory = Path(tempfile.mkdtemp(prefix="llm-council-pg-"))
        password = secrets.token_hex(12)
        (directory / "pwfile").write_text(password + "\n")
        if user is not None:
            os.chown(directory, user.pw_uid, user.pw_gid)
            os.chown(directory / "pwfile", user.pw_uid, user.pw_gid)
        server = cls(directory, _free_port(), password, user)
        data = directory / "data"
        server._run(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                SUPERUSER,
                "--pwfile",
                str(directory / "pwfile"),
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "-E",
                "UTF8",
                "--no-sync",
            ]
        )
        for attempt in range(PORT_ATTEMPTS):
            try:
                server._start(bin_dir)
                break
            except RuntimeError as failed:
                # the free port was taken between the probe and the server's bind (another
                # test's server or client): try a fresh one; any other failure is raised
                if "already in use" not in str(failed) or attempt == PORT_ATTEMPTS - 1:
                    raise
                server.port = _free_port()
        server._watch_parent(bin_dir)
        return server

    def _start(self, bin_dir: Path) -> None:
        """``pg_ctl start`` on :attr:`port`, with a fresh log (its tail is quoted on failure).

        The wait is long: it only ever catches a hang, never a slow start on a loaded machine.
        """
        (self.directory / "server.log").unlink(missing_ok=True)
        options = (
            f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c max_connections=120 -c shared_buffers=32MB"
        )
        self._run(
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(self.directory / "data"),
                "-l",
                str(self.directory / "server.log"),
                "-o",
                options,
                "-w",
                "-t",
                str(START_WAIT_S),
                "start",
            ],
            timeout_s=START_WAIT_S + 60,
        )

    def _watch_parent(self, bin_dir: Path) -> None:
        """Stop the server if this process dies without ``stop()`` (a killed test run)."""
        data = self.directory / "data"
        script = (
            f"while [ -d /proc/{os.getpid()} ]; do sleep 1; done; "
            f"[ -f {data}/postmaster.pid ] && {bin_dir}/pg_ctl -D {data} -m immediate stop; "
            f"rm -rf {self.directory}"
        )
        subprocess.Popen(
            self._command(self._user, ["sh", "-c", script]),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def stop(self) -> None:
        bin_dir = _bin_dir()
        try:
            if bin_dir is not None and (self.directory / "data" / "postmaster.pid").exists():
                self._run(
                    [
                        str(bin_dir / "pg_ctl"),
                        "-D",
                        str(self.directory / "data"),
                        "-m",
                        "immediate",
                        "stop",
                    ]
                )
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)

    def create_database(self, name: str) -> str:
        """A fresh empty database; returns its URL."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.database_url(name)
