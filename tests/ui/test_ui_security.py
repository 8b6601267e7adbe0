"""The browser view's doors, each tried with its attack: headers on every answer (no framing, a CSP), the token a view
beyond loopback asks for (none, wrong, from another server, in a foreign or rebound Host), and the read-only view of a
home with nothing in it (it writes nothing)."""

from __future__ import annotations

import contextlib
import io
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the ui extra (starlette) is not installed")
pytest.importorskip("httpx", reason="starlette's TestClient needs httpx")

from starlette.testclient import TestClient  # noqa: E402

from sherpa_skills.cli import main as cli_main  # noqa: E402
from sherpa_skills.ui import create_app  # noqa: E402

TOKEN = "t0ken-for-the-remote-view-0123456789"
OTHER = "another-servers-token-9876543210abcdef"
VIEW = "http://view.example"  # the name the remote view is told to answer to
HTML = {"Accept": "text/html"}
PAGES = ["/runs", "/procedures", "/heartbeat", "/teams", "/memory", "/domains"]
APIS = [
    "/api",
    "/api/runs",
    "/api/procedures",
    "/api/stats",
    "/api/health",
    "/api/heartbeat",
    "/api/teams",
    "/api/memory",
    "/api/domains",
]


def _remote(home: Path, token: str = TOKEN) -> TestClient:
    """The app as `ui --host view.example --allow-remote` builds it, in this process."""
    return TestClient(
        create_app(home, allowed_hosts=["view.example"], token=token), base_url=VIEW, follow_redirects=False
    )


def _framing_refused(r: Any) -> bool:
    return r.headers.get("x-frame-options") == "DENY" and "frame-ancestors 'none'" in r.headers.get(
        "content-security-policy", ""
    )


class TestHeaders:
    def test_every_answer_refuses_framing_and_carries_the_csp(self, tmp_path: Path) -> None:
        """Pages, the API, static files, a 404, a refused host, a refused write, a refused token and the sign-in
        redirect: each says DENY and frame-ancestors 'none' (a clickjacking page cannot frame any of them)."""
        with TestClient(create_app(tmp_path), base_url="http://127.0.0.1") as local:
            answers = [local.get(p) for p in [*PAGES, *APIS, "/static/style.css", "/static/ui.js", "/no/such"]]
            answers.append(local.post("/runs/x/resume"))
        with TestClient(create_app(tmp_path), base_url="http://evil.example") as foreign:
            answers.append(foreign.get("/runs"))
        with _remote(tmp_path) as remote:
            answers += [remote.get("/runs"), remote.get(f"/runs?token={TOKEN}"), remote.get("/runs?token=nope")]
        assert [r.status_code for r in answers[-5:]] == [403, 400, 401, 303, 401]
        assert all(_framing_refused(r) for r in answers), [r.url for r in answers if not _framing_refused(r)]
        csp = answers[0].headers["content-security-policy"]
        # Scripts only from the view's own files (no inline script, no eval); nothing from another site.
        assert "script-src 'self';" in csp and "default-src 'none'" in csp and "unsafe-eval" not in csp
        # Styles only from the stylesheet: diagrams are SVG drawn on the server, so no inline style is allowed.
        assert "style-src 'self';" in csp and "unsafe-inline" not in csp and "data:" not in csp
        assert answers[0].headers["x-content-type-options"] == "nosniff"


class TestToken:
    def test_without_a_token_refused_with_it_served(self, tmp_path: Path) -> None:
        with _remote(tmp_path) as c:
            for path in ["/api/runs", "/runs", "/static/ui.js", "/runs/x/live"]:
                r = c.get(path)
                assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer"), path
            assert "needs its token" in c.get("/api/runs").json()["error"]
            page = c.get("/runs", headers=HTML)
            assert page.status_code == 401 and "needs its token" in page.text and "<html" in page.text
            served = c.get("/api/runs", headers={"Authorization": f"Bearer {TOKEN}"})
            assert served.status_code == 200 and served.json() == []

    def test_wrong_tokens_are_refused_saying_so(self, tmp_path: Path) -> None:
        with _remote(tmp_path) as c:
            for header in [f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", "Bearer ", f"Basic {TOKEN}", TOKEN]:
                r = c.get("/api/runs", headers={"Authorization": header})
                assert r.status_code == 401, header
            assert (
                c.get("/api/runs", headers={"Authorization": "Bearer nope"}).json()["error"] == "refused: wrong token"
            )
            assert "must be 'Bearer TOKEN'" in c.get("/api/runs", headers={"Authorization": "Basic x"}).json()["error"]
            # Not a 500: compare_digest refuses non-ASCII str, so the comparison is of bytes.
            assert c.get("/api/runs?token=t%C3%B6ken", headers=HTML).status_code == 401
            r = c.get("/runs?token=nope", headers=HTML)
            assert r.status_code == 401 and "wrong token in the address" in r.text and "set-cookie" not in r.headers
            assert c.get(f"/runs?token={TOKEN}&token=nope").status_code == 401  # one token, not a choice of two
            # A token in the address signs in a page; a form post carrying one is no sign-in.
            assert c.post(f"/runs/x/resume?token={TOKEN}").status_code == 401

    def test_the_address_signs_in_once_then_a_cookie(self, tmp_path: Path) -> None:
        """?token= answers with a redirect to the same address without it and an HttpOnly SameSite=Strict cookie that
        is not the token; the cookie alone then serves pages and the API."""
        with _remote(tmp_path) as c:
            r = c.get(f"/runs?status=final&token={TOKEN}&q=a+b")
            assert r.status_code == 303 and r.headers["location"] == "/runs?status=final&q=a+b"
            cookie = r.headers["set-cookie"]
            assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
            assert TOKEN not in cookie and TOKEN not in r.text
            assert c.get("/runs?status=final&q=a+b", headers=HTML).status_code == 200  # the client keeps the cookie
            assert c.get("/api/runs").status_code == 200
            name = cookie.split("=", 1)[0]
            c.cookies.clear()
            c.cookies.set(name, "f" * 64)  # a forged value under the right name
            r = c.get("/api/runs")
            assert r.status_code == 401 and "sign-in is for another token" in r.json()["error"]

    def test_a_sign_in_from_another_site_moves_on_by_a_page_of_ours(self, tmp_path: Path) -> None:
        """Followed from another site's link (Sec-Fetch-Site: cross-site), the sign-in answers a page that refreshes
        to the address without the token: a redirect would arrive without the SameSite=Strict cookie."""
        with _remote(tmp_path) as c:
            r = c.get(f"/runs?q=x&token={TOKEN}", headers={"Sec-Fetch-Site": "cross-site", **HTML})
            assert r.status_code == 200 and "location" not in r.headers and "SameSite=Strict" in r.headers["set-cookie"]
            assert 'http-equiv="refresh" content="0;url=/runs?q=x"' in r.text and TOKEN not in r.text
            assert c.get(f"/runs?token={TOKEN}", headers={"Sec-Fetch-Site": "none"}).status_code == 303

    def test_a_cookie_from_another_token_is_refused(self, tmp_path: Path) -> None:
        """A browser signed in to another view (another token, maybe on another port of this host) is not signed in
        to this one."""
        with _remote(tmp_path, OTHER) as other:
            other.get(f"/runs?token={OTHER}")
            jar = dict(other.cookies)
        assert jar
        with _remote(tmp_path) as c:
            for name, value in jar.items():
                c.cookies.set(name, value)
            assert c.get("/api/runs").status_code == 401

    def test_the_redirect_after_sign_in_stays_on_this_site(self, tmp_path: Path) -> None:
        """An address like //evil.example/… would be a redirect to another site; the view folds the slashes."""
        with _remote(tmp_path) as c:
            for path in ["//evil.example/runs", "/\\evil.example/runs", "///evil.example"]:
                location = c.get(f"{path}?token={TOKEN}").headers["location"]
                assert location.startswith("/") and not location.startswith(("//", "/\\")), location

    def test_a_right_token_in_a_foreign_host_is_refused(self, tmp_path: Path) -> None:
        """The Host check comes first: the token does not open the view under a name it was not told."""
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        with TestClient(
            create_app(tmp_path, allowed_hosts=["view.example"], token=TOKEN), base_url="http://evil.example"
        ) as c:
            r = c.get("/api/runs", headers=bearer)
            assert r.status_code == 400 and "does not answer to the host name 'evil.example'" in r.json()["error"]
            assert c.get(f"/runs?token={TOKEN}").status_code == 400

    def test_dns_rebinding_host_names_are_refused(self, tmp_path: Path) -> None:
        """A page on attacker.example whose name was rebound to this address sends its own Host; near misses too."""
        with _remote(tmp_path) as c:
            signed = {"Authorization": f"Bearer {TOKEN}"}
            for host in [
                "attacker.example",
                "attacker.example:80",
                "view.example.attacker.example",
                "view.example.",
                "xview.example",
                "127.0.0.1",  # loopback names are not on a remote view's list unless it listens on every address
                "view.example@attacker.example",
                "",
            ]:
                r = c.get("/api/runs", headers={**signed, "Host": host})
                assert r.status_code == 400, host
            assert c.get("/api/runs", headers={**signed, "Host": "VIEW.example:8765"}).status_code == 200

    def test_loopback_needs_no_token_and_still_refuses_other_names(self, tmp_path: Path) -> None:
        for base in ["http://127.0.0.1", "http://localhost:8765", "http://[::1]:8765"]:
            with TestClient(create_app(tmp_path), base_url=base) as c:
                assert c.get("/api/runs").status_code == 200, base
        with TestClient(create_app(tmp_path), base_url="http://rebound.example") as c:
            assert c.get("/api/runs").status_code == 400

    def test_a_wildcard_host_list_is_refused(self, tmp_path: Path) -> None:
        """'*' (the old remote default) is what DNS rebinding needs; it is no longer a value."""
        from sherpa_skills.errors import UsageError

        with pytest.raises(UsageError, match="not a host name"):
            create_app(tmp_path, allowed_hosts=["*"], token=TOKEN)


class TestCommandLine:
    def _run(self, *args: str) -> tuple[int, str]:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = cli_main(["ui", *args])
        return code, err.getvalue()

    def test_refusals_name_what_to_do(self, tmp_path: Path) -> None:
        home = str(tmp_path / "home")
        code, err = self._run("--home", home, "--host", "0.0.0.0", "--allow-remote")
        assert code == 2 and "listens on every address" in err and "--allowed-host NAME" in err
        code, err = self._run("--home", home, "--host", "0.0.0.0", "--allow-remote", "--allowed-host", "*")
        assert code == 2 and "--allowed-host '*' is not a host name" in err
        code, err = self._run("--home", home, "--token-file", str(tmp_path / "missing"))
        assert code == 2 and f"--token-file {tmp_path / 'missing'}: cannot read it" in err
        shared = tmp_path / "shared-token"
        shared.write_text(TOKEN + "\n")
        shared.chmod(0o644)
        code, err = self._run("--home", home, "--token-file", str(shared))
        assert code == 2 and "other users can read it; chmod 600" in err and TOKEN not in err
        short = tmp_path / "short"
        short.write_text("abc\n")
        short.chmod(0o600)
        code, err = self._run("--home", home, "--token-file", str(short))
        assert code == 2 and "line 1 must hold a token of at least 16" in err
        assert not (tmp_path / "home").exists()  # refused before anything was made


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(port: int, path: str, **headers: str) -> tuple[int, bytes]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


class _Served:
    """`sherpa-skills ui ARGS` in its own process, waited for until it answers."""

    def __init__(self, *args: str, env: dict[str, str] | None = None):
        self.port = _free_port()
        cmd = [sys.executable, "-m", "sherpa_skills.cli", "ui", "--port", str(self.port), *args]
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})
        self.lines: list[str] = []
        assert self.proc.stderr is not None
        self.reader = threading.Thread(target=lambda: self.lines.extend(self.proc.stderr or []), daemon=True)
        self.reader.start()

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def __enter__(self) -> _Served:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                assert self.proc.poll() is None, self.stderr
                assert time.monotonic() < deadline, "the view did not start"
                time.sleep(0.1)

    def __exit__(self, *exc: Any) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.reader.join(timeout=10)


class TestServed:
    @pytest.mark.slow
    def test_remote_view_prints_its_token_and_asks_for_it(self, tmp_path: Path) -> None:
        """`ui --host 0.0.0.0 --allow-remote --allowed-host NAME`: a token printed at start; without it 401, with it
        200; a foreign Host 400; the machine itself may use a loopback name (it listens on every address)."""
        served = _Served("--home", str(tmp_path), "--host", "0.0.0.0", "--allow-remote", "--allowed-host", "view.test")
        with served:
            printed = re.search(
                r"http://view\.test:\d+/runs\?token=([A-Za-z0-9_-]{40,}) \(Ctrl-C stops\)", served.stderr
            )
            assert printed, served.stderr
            token = printed.group(1)
            assert _get(served.port, "/api/runs", Host="view.test")[0] == 401
            assert _get(served.port, "/api/runs", Host="view.test", Authorization=f"Bearer {token}") == (200, b"[]")
            assert _get(served.port, "/api/runs", Host="evil.test", Authorization=f"Bearer {token}")[0] == 400
        assert "plain HTTP" in served.stderr and "Authorization: Bearer TOKEN" in served.stderr
        assert served.stderr.count(token) == 1  # printed once, at start; never in a log line

    @pytest.mark.slow
    def test_token_file_view_answers_with_the_token_and_never_logs_it(self, tmp_path: Path) -> None:
        token_file = tmp_path / "token"
        token_file.write_text(TOKEN + "\n")
        token_file.chmod(0o600)
        home = tmp_path / "home"
        served = _Served(
            "--home", str(home), "--host", "0.0.0.0", "--allow-remote", "--allowed-host", "view.test",
            "--token-file", str(token_file), "-v",
        )  # fmt: skip
        with served:
            port = served.port
            assert _get(port, "/api/runs", Host="view.test")[0] == 401
            assert _get(port, "/api/runs", Host="view.test", Authorization="Bearer nope")[0] == 401
            assert _get(port, "/api/runs", Host="view.test", Authorization=f"Bearer {TOKEN}") == (200, b"[]")
            assert _get(port, "/api/runs", Host="127.0.0.1", Authorization=f"Bearer {TOKEN}")[0] == 200
            assert _get(port, "/api/runs", Host="evil.test", Authorization=f"Bearer {TOKEN}")[0] == 400
            status, _ = _get(port, f"/runs?token={TOKEN}", Host="view.test")  # urllib follows the redirect, cookieless
            assert status == 401
        assert TOKEN not in served.stderr and "the token in" in served.stderr
        assert not home.exists()  # read-only over a home that is not there: nothing made


def _listing(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.stat().st_size if p.is_file() else 0)
        for p in sorted(folder.rglob("*"))
    }


class TestReadOnlyEmptyHome:
    def test_serving_every_page_writes_nothing_and_says_how_to_start(self, tmp_path: Path) -> None:
        """The view over an empty home: every page and API answers (empty), the pages say how to start, and the home's
        listing and times are as they were — no store.db, no log, nothing."""
        home = tmp_path / "home"
        home.mkdir()
        before, folder_mtime = _listing(home), home.stat().st_mtime_ns
        with TestClient(create_app(home), base_url="http://127.0.0.1") as c:
            for path in PAGES:
                r = c.get(path)
                assert r.status_code == 200 and "Nothing here yet" in r.text, path
                assert f"sherpa-skills demo --home {home}" in r.text
            for path in APIS:
                assert c.get(path).status_code == 200, path
            assert c.get("/api/runs").json() == [] and c.get("/api").json()["empty"] is True
            assert c.get("/api/runs/nope").status_code == 404 and c.get("/runs/nope").status_code == 404
        assert _listing(home) == before == {} and home.stat().st_mtime_ns == folder_mtime

    def test_a_store_made_while_serving_shows_up(self, tmp_path: Path) -> None:
        """Once something runs with the home (the demo the page suggests), the next page shows it."""
        home = tmp_path / "home"
        with TestClient(create_app(home), base_url="http://127.0.0.1") as c:
            assert "Nothing here yet" in c.get("/runs").text and not home.exists()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                assert cli_main(["demo", "--home", str(home), "--json"]) == 0
            page = c.get("/runs").text
            assert "Nothing here yet" not in page and "support-triage" in page
            assert c.get("/api").json()["empty"] is False and len(c.get("/api/runs").json()) >= 1

    def test_a_home_holding_only_runs_is_read_without_a_write(self, tmp_path: Path) -> None:
        """Where only `demo` ran, the store holds no skills, memory, domains or heartbeat tables: the view reads those
        parts from an empty scratch store instead of creating them in the home (store.db stays byte for byte)."""
        import hashlib

        home = tmp_path / "home"
        # In a process of its own, so its store is closed (the WAL folded in) before the view starts.
        demo = [sys.executable, "-m", "sherpa_skills.cli", "demo", "--home", str(home), "--json"]
        assert subprocess.run(demo, capture_output=True, timeout=120).returncode == 0

        def state() -> dict[str, Any]:
            return {k: (v, hashlib.sha256((home / k).read_bytes()).hexdigest()) for k, v in _listing(home).items()}

        before = state()
        with TestClient(create_app(home), base_url="http://127.0.0.1") as c:
            for path in [*PAGES, *APIS]:
                assert c.get(path).status_code == 200, path
            assert len(c.get("/api/runs").json()) >= 1 and "Nothing here yet" not in c.get("/runs").text
        assert state() == before

    def test_acting_view_still_opens_the_home(self, tmp_path: Path) -> None:
        """--allow-actions writes by design: it opens (and makes) the home's store as before."""
        with TestClient(create_app(tmp_path, allow_actions=True), base_url="http://127.0.0.1") as c:
            assert "Nothing here yet" not in c.get("/runs").text
        assert (tmp_path / "store.db").exists()

    @pytest.mark.slow
    def test_the_command_over_a_missing_home_creates_nothing(self, tmp_path: Path) -> None:
        home = tmp_path / "not-yet"
        with _Served("--home", str(home)) as served:
            status, body = _get(served.port, "/runs")
            assert status == 200 and b"Nothing here yet" in body
            assert _get(served.port, "/api/runs") == (200, b"[]")
        assert not home.exists() and os.listdir(tmp_path) == []
