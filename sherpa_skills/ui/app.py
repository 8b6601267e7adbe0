"""The browser view as a Starlette app: server-rendered pages over the home's stores, each with a JSON twin under /api.

Read-only unless built with `allow_actions`; then a form can resume a waiting run or promote a candidate,
with a CSRF token. Read-only, it writes nothing: a home without a store.db is shown empty (from a scratch store
outside it) until one appears. Every answer passes `security.Guard` (headers, Host names, the token if any).
"""

from __future__ import annotations

import asyncio
import json
import secrets
import shlex
import shutil
import tempfile
import threading
from collections.abc import Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from ..db.url import database_url
from ..errors import SherpaError, StoreError, UsageError
from ..skills.face.text import as_it_runs
from . import memory_view, reading, run_view, views
from .format import FILTERS
from .security import LOOPBACK_NAMES, Guard, allowed_names
from .svg import statechart_svg

STATIC = Path(__file__).parent / "static"
OWN_CACHE = "no-cache"  # our own CSS and JS: revalidated (ETag) on each load, so an upgrade shows at once


class CachedStatic(StaticFiles):
    """Static files with Cache-Control: revalidated each load (cheap with the ETag), so an upgrade shows at once."""

    def file_response(self, full_path: Any, stat_result: Any, scope: Any, status_code: int = 200) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        response.headers["Cache-Control"] = OWN_CACHE
        return response


LOCAL_HOSTS = list(LOOPBACK_NAMES)
POLL_SECS = 0.5


class UI:
    """One server's state: the stores (used under one lock:
    a SQLite connection serves one request at a time), templates, token."""

    def __init__(self, home: Path, *, allow_actions: bool = False):
        self.home = home
        self.lock = threading.Lock()
        self.allow_actions = allow_actions
        self._stores: views.Stores | None = None
        self._scratch: Path | None = None  # the empty stand-in for the parts the home lacks (read-only only)
        self._ready: frozenset[str] = frozenset()
        self._seen: tuple[int, int, int, int] | None = None
        self.stores  # noqa: B018  # opened now, so a broken store.db is refused at start, not at the first page
        self.csrf = secrets.token_urlsafe(32)
        self.env = Environment(
            loader=PackageLoader("sherpa_skills.ui", "templates"), autoescape=select_autoescape(["html"])
        )
        self.env.filters.update(FILTERS)
        self.env.filters["statechart"] = statechart_svg  # diagrams are drawn here, not in the browser
        self.env.filters["as_it_runs"] = (
            as_it_runs  # a step reviewed here is shown as it runs, bidi overrides written out
        )

    @property
    def empty(self) -> bool:
        """The home holds none of the parts yet: the pages show an empty view that says how to start."""
        return self._stores is not None and not self._ready

    def _readable(self) -> frozenset[str]:
        """The parts opened in the home; read-only, only those it already holds (reading.py says why)."""
        if self.allow_actions or database_url() is not None:
            return frozenset(reading.PARTS)
        return reading.held_parts(self.home)

    @property
    def stores(self) -> views.Stores:
        """The home's stores; read-only, a part the home lacks is read from an empty scratch home outside it (opening
        the home's would create or migrate it), and swapped for the home's as soon as another process writes it."""
        if self._stores is not None and (self._scratch is None or reading.signature(self.home) == self._seen):
            return self._stores
        seen = reading.signature(self.home)  # before the look, so a write during it is looked at next time
        ready = self._readable()
        if self._stores is None or ready != self._ready:
            self.close()
            missing = [part for part in reading.PARTS if part not in ready]
            self._scratch = Path(tempfile.mkdtemp(prefix="sherpa-skills-ui-empty-")) if missing else None
            self._stores = views.Stores.open(self.home, dict.fromkeys(missing, self._scratch or self.home))
            self._ready = ready
        self._seen = seen
        return self._stores

    def close(self) -> None:
        stores, scratch, self._stores, self._scratch = self._stores, self._scratch, None, None
        if stores is not None:
            stores.close()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)

    async def read(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        def locked() -> Any:
            with self.lock:
                return fn(self.stores, *args, **kwargs)

        return await run_in_threadpool(locked)

    def render(self, request: Request, template: str, data: dict[str, Any], status: int = 200) -> HTMLResponse:
        html = self.env.get_template(template).render(
            **data,
            request=request,
            path=request.url.path,
            home=str(self.home),
            home_arg=shlex.quote(str(self.home)),
            empty_home=self.empty,
            allow_actions=self.allow_actions,
            csrf=self.csrf,
        )
        return HTMLResponse(html, status_code=status)


def _int(request: Request, name: str, default: int, low: int = 1, high: int = 10_000) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise UsageError(f"query parameter '{name}' must be a whole number, not '{raw[:40]}'") from None
    if not low <= value <= high:
        raise UsageError(f"query parameter '{name}' must be between {low} and {high}, not {value}")
    return value


def _error(request: Request, ui: UI, exc: Exception) -> Response:
    status = 400 if isinstance(exc, UsageError) else 404 if isinstance(exc, StoreError) else 500
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": str(exc)}, status_code=status)
    return ui.render(
        request, "error.html", {"title": "not found" if status == 404 else "error", "message": str(exc)}, status
    )


def _page(ui: UI, template: str, build: Callable[[Request], Any], api: bool = False) -> Callable[[Request], Any]:
    """A route that builds its data under the store lock, then answers HTML or JSON;
    store and usage errors become 404/400."""

    async def endpoint(request: Request) -> Response:
        try:
            data = await build(request)
        except SherpaError as exc:
            return _error(request, ui, exc)
        if api:
            return data if isinstance(data, Response) else JSONResponse(json.loads(json.dumps(data, default=str)))
        return ui.render(request, template, data)

    return endpoint


class _GuardedApp(Starlette):
    """Starlette with the Guard outside its own error handler, so a 500 carries the security headers too."""

    def __init__(self, *args: Any, hosts: list[str], token: str | None, **kwargs: Any):
        self.hosts, self.token = sorted(allowed_names(hosts)), token  # checked now: a bad name is refused at start
        super().__init__(*args, **kwargs)

    def build_middleware_stack(self) -> ASGIApp:
        return Guard(super().build_middleware_stack(), allowed_hosts=self.hosts, token=self.token)


def create_app(
    home: str | Path,
    *,
    allow_actions: bool = False,
    allowed_hosts: list[str] | None = None,
    token: str | None = None,
) -> Starlette:
    """The app over one home folder. `allowed_hosts`: the Host names it answers (default: loopback names only, which
    keeps pages on other sites out through DNS rebinding); `token`: what every client must present (None: nobody)."""
    ui = UI(Path(home), allow_actions=allow_actions)

    async def runs(request: Request) -> dict[str, Any]:
        q = request.query_params
        return await ui.read(
            views.runs_page,
            status=q.get("status"),
            workflow=q.get("workflow"),
            q=q.get("q"),
            page=_int(request, "page", 1),
            per_page=_int(request, "per_page", views.PER_PAGE, 1, 500),
        )

    async def api_runs(request: Request) -> Response:
        data = await runs(request)
        # The body is exactly `runs --json`'s list; paging travels in headers.
        return JSONResponse(
            [
                {
                    k: r[k]
                    for k in (
                        "run_id",
                        "workflow",
                        "status",
                        "state",
                        "steps",
                        "llm_calls",
                        "created",
                        "updated",
                        "error",
                        "log",
                    )
                }
                for r in data["runs"]
            ],
            headers={"X-Total-Count": str(data["total"]), "X-Page": str(data["page"]), "X-Pages": str(data["pages"])},
        )

    async def run(request: Request) -> dict[str, Any]:
        tail = None if request.query_params.get("all") else _int(request, "tail", views.TAIL, 0, 1_000_000)
        return await ui.read(run_view.run_page, request.path_params["run_id"], tail)

    async def step(request: Request) -> dict[str, Any]:
        tick = request.path_params["tick"]
        if not tick.isdigit():
            raise UsageError(f"step '{tick[:40]}' must be a whole number (the step's tick)")
        return await ui.read(run_view.step_page, request.path_params["run_id"], int(tick))

    async def api_run(request: Request) -> dict[str, Any]:
        return await ui.read(views.run_detail_json, request.path_params["run_id"])

    async def api_provenance(request: Request) -> dict[str, Any]:
        def build(stores: views.Stores, run_id: str) -> dict[str, Any]:
            return run_view.provenance(stores, stores.runs.get_run(run_id).run_id)

        return await ui.read(build, request.path_params["run_id"])

    async def run_state(request: Request) -> dict[str, Any]:
        return await ui.read(views.run_state, request.path_params["run_id"])

    async def run_live(request: Request) -> Response:
        """Server-sent events: the run's position each time it changes, until it is final or the page goes away."""
        run_id = request.path_params["run_id"]
        try:
            first = await ui.read(views.run_state, run_id)
        except SherpaError as exc:
            return _error(request, ui, exc)

        async def stream() -> Any:
            state, last = first, None
            while True:
                key = (state["tick"], state["updated"], state["status"])
                if key != last:
                    last = key
                    yield f"data: {json.dumps(state)}\n\n"
                if state["status"] not in views.LIVE:
                    return
                await asyncio.sleep(POLL_SECS)
                if await request.is_disconnected():
                    return
                state = await ui.read(views.run_state, run_id)

        return StreamingResponse(stream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})

    async def procedures(request: Request) -> dict[str, Any]:
        return await ui.read(views.procedures_page)

    async def api_decisions(request: Request) -> dict[str, Any]:
        return await ui.read(views.decisions_page)

    async def procedure(request: Request) -> dict[str, Any]:
        version = _int(request, "version", 0, 0, 1_000_000) or None
        return await ui.read(views.procedure_page, request.path_params["procedure_id"], version)

    async def api_procedures(request: Request) -> list[dict[str, Any]]:
        data = await procedures(request)
        return [
            {k: v for k, v in p.items() if k not in ("rolling_success_rate", "total_executions", "recent")}
            for p in data["all"]
        ]

    async def api_procedure(request: Request) -> dict[str, Any]:
        return (await procedure(request))["procedure"]

    async def api_stats(request: Request) -> dict[str, Any]:
        return (await procedures(request))["stats"]

    async def api_health(request: Request) -> list[dict[str, Any]]:
        def health(stores: views.Stores) -> list[dict[str, Any]]:
            return [h.model_dump(mode="json") for h in stores.skills.health()]

        return await ui.read(health)

    async def heartbeat(request: Request) -> dict[str, Any]:
        return await ui.read(views.heartbeat_page, _int(request, "last", 20, 1, 1000))

    async def api_heartbeat(request: Request) -> list[dict[str, Any]]:
        return (await heartbeat(request))["reports"]

    async def teams(request: Request) -> dict[str, Any]:
        return await ui.read(views.teams_page)

    async def team(request: Request) -> dict[str, Any]:
        return await ui.read(views.team_page, request.path_params["task"])

    async def memory(request: Request) -> dict[str, Any]:
        return await ui.read(memory_view.memory_page, request.query_params.get("q"))

    async def memory_item(request: Request) -> dict[str, Any]:
        return await ui.read(memory_view.memory_item_page, request.path_params["artifact_id"])

    async def domains(request: Request) -> dict[str, Any]:
        return await ui.read(memory_view.domains_page)

    async def domain(request: Request) -> dict[str, Any]:
        return await ui.read(memory_view.domain_page, request.path_params["name"])

    async def api_index(request: Request) -> dict[str, Any]:
        return {
            "home": str(ui.home),
            "allow_actions": ui.allow_actions,
            "empty": ui.empty,
            "routes": [
                "/api/runs",
                "/api/runs/{run_id}",
                "/api/runs/{run_id}/state",
                "/api/runs/{run_id}/provenance",
                "/api/runs/{run_id}/steps/{tick}",
                "/api/procedures",
                "/api/procedures/{id}",
                "/api/decisions",
                "/api/stats",
                "/api/health",
                "/api/heartbeat",
                "/api/teams",
                "/api/teams/{task}",
                "/api/memory",
                "/api/domains",
            ],
        }

    def page(template: str, build: Callable[[Request], Any]) -> Callable[[Request], Any]:
        return _page(ui, template, build)

    def api(build: Callable[[Request], Any]) -> Callable[[Request], Any]:
        return _page(ui, "", build, api=True)

    routes = [
        Route("/", lambda request: RedirectResponse("/runs")),
        Route("/runs", page("runs.html", runs)),
        Route("/runs/{run_id}", page("run.html", run)),
        Route("/runs/{run_id}/live", run_live),
        Route("/runs/{run_id}/steps/{tick}", page("step.html", step)),
        Route("/procedures", page("procedures.html", procedures)),
        Route("/procedures/{procedure_id}", page("procedure.html", procedure)),
        Route("/heartbeat", page("heartbeat.html", heartbeat)),
        Route("/teams", page("teams.html", teams)),
        Route("/teams/{task}", page("team.html", team)),
        Route("/memory", page("memory.html", memory)),
        Route("/memory/{artifact_id}", page("memory_item.html", memory_item)),
        Route("/domains", page("domains.html", domains)),
        Route("/domains/{name}", page("domain.html", domain)),
        Route("/api", api(api_index)),
        Route("/api/memory", api(memory)),
        Route("/api/domains", api(domains)),
        Route("/api/domains/{name}", api(domain)),
        Route("/api/runs", api(api_runs)),
        Route("/api/runs/{run_id}", api(api_run)),
        Route("/api/runs/{run_id}/state", api(run_state)),
        Route("/api/runs/{run_id}/provenance", api(api_provenance)),
        Route("/api/runs/{run_id}/steps/{tick}", api(step)),
        Route("/api/procedures", api(api_procedures)),
        Route("/api/decisions", api(api_decisions)),
        Route("/api/procedures/{procedure_id}", api(api_procedure)),
        Route("/api/stats", api(api_stats)),
        Route("/api/health", api(api_health)),
        Route("/api/heartbeat", api(api_heartbeat)),
        Route("/api/teams", api(teams)),
        Route("/api/teams/{task}", api(team)),
        Mount("/static", CachedStatic(directory=STATIC), name="static"),
    ]
    if allow_actions:
        from .actions import action_routes

        routes += action_routes(ui)
    else:

        async def read_only(request: Request) -> Response:
            return JSONResponse(
                {"error": "read-only: start `sherpa-skills ui --allow-actions` to resume runs or review candidates"},
                status_code=403,
            )

        routes += [
            Route(p, read_only, methods=["POST"])
            for p in (
                "/runs/{run_id}/resume",
                "/runs/{run_id}/fork",
                "/procedures/{procedure_id}/promote",
                "/procedures/{procedure_id}/reject",
            )
        ]
    middleware = [Middleware(GZipMiddleware, minimum_size=1024)]

    @asynccontextmanager
    async def lifespan(app: Starlette) -> Any:
        yield
        with ui.lock:
            ui.close()

    async def not_found(request: Request, exc: Exception) -> Response:
        """Unknown paths get the styled page (or JSON under /api), not a bare 'Not Found'."""
        return _error(request, ui, StoreError(f"no page at {request.url.path[:200]}; the menu above lists them"))

    app = _GuardedApp(
        routes=routes,
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={404: not_found},
        hosts=allowed_hosts or LOCAL_HOSTS,
        token=token,
    )
    app.state.ui = ui
    return app


__all__ = ["create_app", "UI"]
