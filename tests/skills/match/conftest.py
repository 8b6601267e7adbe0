"""The small store the answer and floor tests share: four procedures, each captured three times."""

from __future__ import annotations

import pytest

import sherpa_skills as sk

DEPLOY = "deploy the proxy configuration and restart the service"


@pytest.fixture
def skills(skill_store: sk.SkillStore) -> sk.SkillStore:
    """Deploy, back up, load-test and clean-cache procedures (a module may define its own `skills`)."""
    for task_type, description, steps in [
        ("deploy-proxy", DEPLOY, ["echo cp proxy.conf /etc/proxy/", "echo systemctl restart proxy"]),
        ("db-backup", "dump the postgres database to a compressed file", ["echo pg_dump app", "echo gzip app.sql"]),
        ("load-test", "run the load test against staging", ["echo locust --users {{ users }} --host staging"]),
        ("clean-cache", "clear the redis cache", ["echo redis-cli FLUSHALL"]),
    ]:
        for _ in range(3):  # one success is not proof: captured three times
            skill_store.capture(task_type, steps, description=description)
    return skill_store
