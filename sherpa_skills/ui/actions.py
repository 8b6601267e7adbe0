"""The only writes the browser view makes, and only when started with --allow-actions: resume a waiting run, fork a
run from a step, promote or reject a candidate.

Each form carries the server's CSRF token; a request from another origin, or without the token, changes nothing.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import structlog
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from ..errors import SherpaError, UsageError
from . import views

log = structlog.get_logger("sherpa_skills.ui")


def _refuse(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status)


def _wants_html(request: Request) -> bool:
    return "text/html" in request.headers.get("accept", "")


def _refused(ui: Any, request: Request, status: int, message: str, back: str, label: str) -> Response:
    """A refusal a person can read: in the page, with the way back to where they were (JSON for other clients)."""
    if not _wants_html(request):
        return _refuse(status, message)
    return ui.render(
        request, "refused.html", {"title": "refused", "message": message, "back": back, "label": label}, status
    )


def form_fields(body: bytes) -> dict[str, list[str]]:
    """An urlencoded form body (no multipart parser needed for our few text fields)."""
    return parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=True)


async def _checked_form(ui: Any, request: Request) -> dict[str, list[str]] | Response:
    """The form, if it carries this server's token and comes from this server's pages."""
    origin = request.headers.get("origin")
    if origin and urlsplit(origin).netloc != request.headers.get("host"):
        return _refuse(403, f"refused: a form posted from {origin[:80]} (another origin)")
    form = form_fields(await request.body())
    token = (form.get("csrf") or [request.headers.get("x-csrf-token", "")])[0]
    # Bytes: compare_digest refuses str with non-ASCII characters, which a client is free to send.
    if not token or not secrets.compare_digest(token.encode("utf-8", "surrogatepass"), ui.csrf.encode()):
        # Same origin, stale token (the view restarted since the page loaded): the person gets the page back to reload.
        back = request.url.path.rsplit("/", 1)[0]
        return _refused(ui, request, 403, "refused: missing or wrong CSRF token (reload the page)", back, "reload it")
    return form


def _lines(form: dict[str, list[str]], name: str) -> list[str]:
    """A textarea of NAME=VALUE lines, blank lines skipped."""
    return [line.strip() for line in (form.get(name) or [""])[0].splitlines() if line.strip()]


def _resume(home: Any, run_id: str, inputs: dict[str, Any], trigger: str | None, args: dict[str, Any]) -> None:
    """Runs in a thread with its own store, so the pages stay responsive and show it live."""
    from ..runtime import load_workflow
    from ..stores import Home

    house = Home(home)
    try:
        store = house.runs
        row = store.get_run(run_id)
        if row.workflow_path is None:
            raise UsageError(f"run {run_id} was not started from a workflow file: nothing to resume it with")
        workflow = load_workflow(row.workflow_path)
        agent = workflow.resume(store, run_id)
        result = agent.run(inputs, trigger=trigger, args=args)
        log.info("ui.resumed", run_id=run_id, status=result.status, state=result.state)
    except Exception as exc:  # the run records its own errors; this only keeps the thread from dying silently
        log.error("ui.resume_failed", run_id=run_id, error=str(exc))
    finally:
        house.close()


def _fork(home: Any, new_run_id: str, plan: Any, workflow_path: str) -> None:
    """Runs the fork in a thread with its own store, as a resume does; its page follows it live."""
    from ..runtime import load_workflow
    from ..stores import Home

    house = Home(home)
    try:
        store = house.runs
        workflow = load_workflow(workflow_path)
        agent = workflow.resume(store, new_run_id)
        result = agent.run(plan.inputs, trigger=plan.trigger)
        log.info("ui.forked", run_id=new_run_id, parent=plan.parent_run_id, status=result.status)
    except Exception as exc:  # the fork records its own errors; this only keeps the thread from dying silently
        log.error("ui.fork_failed", run_id=new_run_id, error=str(exc))
    finally:
        house.close()


def action_routes(ui: Any) -> list[Route]:
    from ..engine.inputs import parse_assignments, parse_inputs
    from ..engine.run.identity import spec_hash
    from ..runtime import load_workflow

    async def resume(request: Request) -> Response:
        form = await _checked_form(ui, request)
        if isinstance(form, Response):
            return form
        run_id = request.path_params["run_id"]

        def check(stores: views.Stores) -> tuple[Any, dict[str, Any], str | None, dict[str, Any]]:
            row = stores.runs.get_run(run_id)
            if row.status != "waiting":
                raise UsageError(f"run {row.run_id} is {row.status}, not waiting: there is nothing to resume")
            machine = views.machine_of(row.workflow_path)
            if machine is None or row.workflow_path is None:  # machine_of(None) is None: said for the type checker
                raise UsageError(f"run {row.run_id} cannot be resumed here: its workflow file does not load")
            if spec_hash(machine) != row.spec_hash:
                raise UsageError(
                    f"workflow '{row.workflow_path}' changed since run {row.run_id} started; "
                    "resume it from the CLI with --allow-changed"
                )
            trigger = (form.get("trigger") or [""])[0] or None
            offered = [
                t["trigger"]
                for t in views.waiting_options(machine, row.state, stores.runs.load_belief(row.run_id))["triggers"]
            ]
            if trigger and trigger not in offered:
                raise UsageError(
                    f"trigger '{trigger}' is not a transition out of state {row.state}; these are: "
                    f"{', '.join(offered) or 'none'}"
                )
            inputs = parse_inputs(machine.spec, _lines(form, "inputs"), starting=False)
            args = parse_assignments(_lines(form, "args"), "argument")
            if args and not trigger:
                raise UsageError("trigger arguments need a trigger: pick the transition they are for")
            if trigger:
                # The engine's own check, before the thread starts: a refusal is said here, and the run stays as it was.
                agent = load_workflow(row.workflow_path).resume(stores.runs, row.run_id)
                agent.check_trigger(trigger, args, inputs)
            return row, inputs, trigger, args

        try:
            row, inputs, trigger, args = await ui.read(check)
        except SherpaError as exc:
            status = 409 if "not waiting" in str(exc) else 400
            return _refused(ui, request, status, str(exc), f"/runs/{run_id}", f"back to run {run_id}")
        threading.Thread(
            target=_resume, args=(ui.home, row.run_id, inputs, trigger, args), daemon=True, name=f"resume-{row.run_id}"
        ).start()
        return RedirectResponse(f"/runs/{row.run_id}", status_code=303)

    async def fork(request: Request) -> Response:
        """Fork from a step, as the CLI does it: first the plan (what `fork --dry-run` says), changing nothing; only a
        confirmed form makes the fork, which then runs in a thread and answers with its page, following it live."""
        from ..engine.fork import create_fork, plan_fork

        form = await _checked_form(ui, request)
        if isinstance(form, Response):
            return form
        run_id = request.path_params["run_id"]
        confirmed = (form.get("confirm") or [""])[0] == "yes"
        raw = (form.get("at") or [""])[0]

        def check(stores: views.Stores) -> tuple[Any, str, str | None]:
            row = stores.runs.get_run(run_id)
            if not raw.strip().isdigit():
                raise UsageError(f"field 'at' must be a step number, not '{raw[:40]}'")
            machine = views.machine_of(row.workflow_path)
            if machine is None or row.workflow_path is None:
                raise UsageError(f"run {row.run_id} cannot be forked here: its workflow file does not load")
            inputs = parse_inputs(machine.spec, _lines(form, "inputs"), starting=False)
            trigger = (form.get("trigger") or [""])[0].strip() or None
            plan = plan_fork(stores.runs, row.run_id, int(raw), machine, inputs=inputs, trigger=trigger)
            if trigger is not None and trigger not in plan.available:
                raise UsageError(
                    f"trigger '{trigger}' is not available in state '{plan.state}' at step {plan.at}; available: "
                    f"{', '.join(plan.available) or 'none'}"
                )
            if not confirmed:
                return plan, row.workflow_path, None
            # Written before the answer, so the page it redirects to exists; the fork then runs in a thread.
            return plan, row.workflow_path, create_fork(stores.runs, plan)

        back = f"/runs/{run_id}/steps/{raw.strip()}" if raw.strip().isdigit() else f"/runs/{run_id}"
        try:
            plan, path, new_id = await ui.read(check)
        except SherpaError as exc:
            return _refused(ui, request, 400, str(exc), back, "back to the step")
        if new_id is None:
            if not _wants_html(request):
                return JSONResponse({**plan.to_dict(), "dry_run": True})  # what `fork --dry-run --json` prints
            fields = {k: (form.get(k) or [""])[0] for k in ("at", "trigger", "inputs")}
            data = {"title": "fork?", "plan": plan.to_dict(), "fields": fields, "back": back, "run_id": run_id}
            return ui.render(request, "fork_preview.html", data)
        threading.Thread(target=_fork, args=(ui.home, new_id, plan, path), daemon=True, name=f"fork-{new_id}").start()
        return RedirectResponse(f"/runs/{new_id}", status_code=303)

    def review(verdict: str) -> Callable[[Request], Awaitable[Response]]:
        """A candidate's review, as `learn promote` / `learn reject` do it: only a candidate, only with the token."""

        async def decide(request: Request) -> Response:
            form = await _checked_form(ui, request)
            if isinstance(form, Response):
                return form

            def do(stores: views.Stores) -> str:
                p = stores.skills.get(request.path_params["procedure_id"])
                if p.status != "candidate":
                    raise UsageError(f"{p.id} is already {p.status}")
                # promote counts as the second success (one is not proof); reject drops it for good
                return (
                    stores.skills.promote(p.id) if verdict == "promote" else stores.skills.reject_candidate(p.id)
                ).id

            try:
                procedure_id = await ui.read(do)
            except SherpaError as exc:
                pid = request.path_params["procedure_id"]
                return _refused(ui, request, 400, str(exc), f"/procedures/{pid}", f"back to {pid}")
            log.info(f"ui.{verdict}", procedure_id=procedure_id)
            return RedirectResponse(f"/procedures/{procedure_id}", status_code=303)

        return decide

    return [
        Route("/runs/{run_id}/resume", resume, methods=["POST"]),
        Route("/runs/{run_id}/fork", fork, methods=["POST"]),
        Route("/procedures/{procedure_id}/promote", review("promote"), methods=["POST"]),
        Route("/procedures/{procedure_id}/reject", review("reject"), methods=["POST"]),
    ]
