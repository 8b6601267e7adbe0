"""Secret redaction: each kind of secret, ordinary commands left alone, nested values, idempotence, speed."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections import namedtuple

import pytest

from sherpa_skills.redact import (
    KINDS,
    REDACTED,
    contains_secret,
    find_secrets,
    is_secret_name,
    keeps_numbers_under,
    redact,
    redact_item,
    redact_value,
)

R = REDACTED

# Fake credentials, assembled from pieces so that no scanner takes this file for a leak.
GHP = "ghp" + "_" + "a1B2c3D4e5F6g7H8i9J0" + "k1L2m3N4o5P6q7R8"  # 36 chars after the prefix
GHS = "ghs" + "_" + "Z9y8X7w6V5u4T3s2R1q0" + "P9o8N7m6L5k4j3I2"
GITHUB_PAT = "github" + "_pat_" + "11ABCDEFG0123456789_" + "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUV"
GLPAT = "gl" + "pat-" + "xXyYzZ0123456789aBcD"
SLACK = "xo" + "xb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
SLACK_HOOK_PATH = "T00000000/B00000000/" + "XXXXXXXXXXXXXXXXXXXXXXXX"
OPENAI = "sk" + "-" + "aBcDeFgHiJkLmNoPqRsT" + "3BlbkFJ" + "uVwXyZ0123456789abcdefgh"
OPENAI_PROJ = "sk" + "-proj-" + "Ab3_dEf-Gh1JkLmNoPqRsTuVwXyZ0123456789"
ANTHROPIC = "sk" + "-ant-api03-" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCdEfGhIjKlMnOpQrSt-AAAA"
AWS_ID = "AKIA" + "IOSFODNN7EXAMPLE"
AWS_STS_ID = "ASIA" + "Y34FZKBOKMUTVV7A"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"  # 40 chars
GOOGLE = "AIza" + "SyA-1234567890abcdefghijklmnopqrstu"  # 35 after the prefix
GOOGLE_OAUTH = "ya29" + ".a0AfH6SMBxyzABCDEFGHIJKLMNOPqrstuv"
STRIPE = "sk" + "_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
STRIPE_RK = "rk" + "_live_" + "51H8abcDEFghiJKLmno"
NPM = "npm" + "_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
PYPI = "pypi" + "-AgEIcHlwaS5vcmcCJGFiY2RlZmctMTIzNC01Njc4LTkwYWItY2RlZjEyMzQ1Njc4AAIqWzMsImFiYyJd"
HF = "hf" + "_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567"
JWT = (
    "eyJ"
    + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    + ".eyJ"
    + "zdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ"
    + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM_BODY = "MIIEpAIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MaGBir/JXHFOqX\nqUIcWIf2E0Xw1ZpvoKq+8hW/uVvgdqNrq3n0H7Q==\n"
PEM = "-----BEGIN RSA " + "PRIVATE KEY-----\n" + PEM_BODY + "-----END RSA " + "PRIVATE KEY-----"
PEM_REDACTED = "-----BEGIN RSA PRIVATE KEY-----\n" + R + "\n-----END RSA PRIVATE KEY-----"

# (kind, input, expected)
SECRET_CASES: list[tuple[str, str, str]] = [
    # env assignments: keep the name, redact the value
    ("secret_assignment", "export GITHUB_TOKEN=abc123def", f"export GITHUB_TOKEN={R}"),
    ("secret_assignment", "export OPENAI_API_KEY='abc 123'", f"export OPENAI_API_KEY='{R}'"),
    ("secret_assignment", 'export DB_PASSWORD="hunter2" && ./run', f'export DB_PASSWORD="{R}" && ./run'),
    ("secret_assignment", "PGPASSWORD=hunter2 psql -h db -U app", f"PGPASSWORD={R} psql -h db -U app"),
    ("secret_assignment", "MYSQL_PWD=s3cret mysql -u root", f"MYSQL_PWD={R} mysql -u root"),
    ("secret_assignment", "DB_PASS=s3cret ./migrate", f"DB_PASS={R} ./migrate"),
    ("secret_assignment", "env API_SECRET=xyz CLIENT_ID=42 ./app", f"env API_SECRET={R} CLIENT_ID=42 ./app"),
    (
        "secret_assignment",
        "docker run -e POSTGRES_PASSWORD=pw -e POSTGRES_USER=app postgres",
        f"docker run -e POSTGRES_PASSWORD={R} -e POSTGRES_USER=app postgres",
    ),
    ("aws_secret_access_key", "export AWS_SESSION_TOKEN=FwoGZXIvYXdzEJr", f"export AWS_SESSION_TOKEN={R}"),
    ("secret_assignment", "export SLACK_AUTH=abc", f"export SLACK_AUTH={R}"),
    ("secret_assignment", "export DOCKER_CREDENTIALS=user:pw", f"export DOCKER_CREDENTIALS={R}"),
    ("secret_assignment", "export STRIPE_KEY=abcdef", f"export STRIPE_KEY={R}"),
    ("secret_assignment", "$env:GITHUB_TOKEN=abc123", f"$env:GITHUB_TOKEN={R}"),
    ("secret_assignment", "terraform apply -var 'db_password=abc'", f"terraform apply -var 'db_password={R}'"),
    (
        "secret_assignment",
        "helm install x --set auth.password=pw123 chart",
        f"helm install x --set auth.password={R} chart",
    ),
    # generic key=value and query strings
    ("secret_assignment", "GET /v1/items?api_key=abc123&page=2", f"GET /v1/items?api_key={R}&page=2"),
    (
        "secret_assignment",
        "https://example.com/cb#access_token=xyz789&state=1",
        f"https://example.com/cb#access_token={R}&state=1",
    ),
    ("secret_assignment", "login ok token=abc123 user=bob", f"login ok token={R} user=bob"),
    ("secret_assignment", "apikey=abc secret=def", f"apikey={R} secret={R}"),
    ("secret_assignment", "//registry.npmjs.org/:_authToken=abcdef", f"//registry.npmjs.org/:_authToken={R}"),
    (
        "secret_assignment",
        'config = {"password": "hunter2", "user": "bob"}',
        f'config = {{"password": "{R}", "user": "bob"}}',
    ),
    ("secret_assignment", "{'clientSecret': 'abc', 'region': 'eu'}", f"{{'clientSecret': '{R}', 'region': 'eu'}}"),
    ("secret_assignment", 'password = "hunter2"', f'password = "{R}"'),
    ("secret_assignment", "client_secret: 'abc'", f"client_secret: '{R}'"),
    ("secret_assignment", "password: hunter2", f"password: {R}"),
    # name: value pairs inside prose and log lines, for names that are secret by themselves
    (
        "secret_assignment",
        "note: remember … password: CorrectHorseBattery9 for prod",
        f"note: remember … password: {R} for prod",
    ),
    ("secret_assignment", "login failed (user bob, Passwd: hunter22)", f"login failed (user bob, Passwd: {R})"),
    (
        "secret_assignment",
        "rotated; new api_key: abcd1234, old one revoked",
        f"rotated; new api_key: {R}, old one revoked",
    ),
    ("secret_assignment", "the vault secret: s3cr3t-v4lue is set", f"the vault secret: {R} is set"),
    ("secret_assignment", "ok passwd=hunter22 done", f"ok passwd={R} done"),
    ("secret_assignment", "then secret=abc123xyz; continue", f"then secret={R}; continue"),
    (
        "secret_assignment",
        "db:\n  user: app\n  - api_token: abc123  # rotate monthly\n",
        f"db:\n  user: app\n  - api_token: {R}  # rotate monthly\n",
    ),
    (
        "config_set",
        "npm config set //registry.npmjs.org/:_authToken abc123",
        f"npm config set //registry.npmjs.org/:_authToken {R}",
    ),
    ("config_set", "poetry config pypi-token.pypi abc123", f"poetry config pypi-token.pypi {R}"),
    # long flags
    ("secret_flag", "mytool --password hunter2 --verbose", f"mytool --password {R} --verbose"),
    ("secret_flag", "mytool --password=hunter2", f"mytool --password={R}"),
    ("secret_flag", "gh-cli --token abc123 repo list", f"gh-cli --token {R} repo list"),
    ("secret_flag", "tool --api-key 'abc 123' run", f"tool --api-key '{R}' run"),
    ("secret_flag", "tool --secret=xyz", f"tool --secret={R}"),
    ("secret_flag", "kubectl --token=abc123 get pods", f"kubectl --token={R} get pods"),
    ("secret_flag", "az login --client-secret abc --tenant t", f"az login --client-secret {R} --tenant t"),
    (
        "secret_flag",
        "wget --user=bob --password=hunter2 https://x.example.invalid",
        f"wget --user=bob --password={R} https://x.example.invalid",
    ),
    # tool-specific
    ("mysql_password", "mysql -u root -phunter2 app", f"mysql -u root -p{R} app"),
    ("mysql_password", "mysqldump -uroot -p'hunter 2' db > dump.sql", f"mysqldump -uroot -p'{R}' db > dump.sql"),
    (
        "mysql_password",
        "docker exec db mariadb -u root -phunter2 -e 'select 1'",
        f"docker exec db mariadb -u root -p{R} -e 'select 1'",
    ),
    ("sshpass_password", "sshpass -p hunter2 ssh -p 2222 bob@host", f"sshpass -p {R} ssh -p 2222 bob@host"),
    ("sshpass_password", "sshpass -v -phunter2 scp f host:", f"sshpass -v -p{R} scp f host:"),
    (
        "docker_login_password",
        "docker login -u bob -p hunter2 registry.example.com",
        f"docker login -u bob -p {R} registry.example.com",
    ),
    ("docker_login_password", "podman login -p=hunter2 quay.io", f"podman login -p={R} quay.io"),
    (
        "piped_password",
        "echo hunter2 | docker login -u bob --password-stdin",
        f"echo {R} | docker login -u bob --password-stdin",
    ),
    (
        "piped_password",
        "echo -n 'hunter2' | helm registry login r.io --password-stdin",
        f"echo -n '{R}' | helm registry login r.io --password-stdin",
    ),
    (
        "piped_password",
        "printf '%s' abc123 | gh auth login --with-token",
        f"printf '%s' {R} | gh auth login --with-token",
    ),
    ("piped_password", "echo bob:hunter2 | chpasswd", f"echo {R} | chpasswd"),
    ("piped_password", "docker login --password-stdin <<< 'hunter2'", f"docker login --password-stdin <<< '{R}'"),
    ("basic_auth", "curl -u bob:hunter2 https://api.example.com", f"curl -u bob:{R} https://api.example.com"),
    (
        "basic_auth",
        "curl --user 'bob:hunter2' https://x.example.invalid",
        f"curl --user 'bob:{R}' https://x.example.invalid",
    ),
    ("ssh_passphrase", 'ssh-keygen -t ed25519 -N "correct horse" -f key', f'ssh-keygen -t ed25519 -N "{R}" -f key'),
    (
        "openssl_password",
        "openssl rsa -in k.pem -passin pass:hunter2 -out k2.pem",
        f"openssl rsa -in k.pem -passin pass:{R} -out k2.pem",
    ),
    (
        "password_flag",
        "keytool -list -keystore ks.jks -storepass changeit",
        f"keytool -list -keystore ks.jks -storepass {R}",
    ),
    (
        "netrc_password",
        "machine api.example.com login bob password hunter2",
        f"machine api.example.com login bob password {R}",
    ),
    # URLs
    (
        "url_password",
        "git clone https://bob:hunter2@git.example.invalid/org/repo.git",
        f"git clone https://bob:{R}@git.example.invalid/org/repo.git",
    ),
    (
        "url_password",
        "psql postgresql://app:s3cr3t@db.internal:5432/app",
        f"psql postgresql://app:{R}@db.internal:5432/app",
    ),
    ("url_password", "redis-cli -u redis://:hunter2@localhost:6379/0", f"redis-cli -u redis://:{R}@localhost:6379/0"),
    (
        "url_password",
        "export DATABASE_URL=mysql://root:pw@localhost/db",
        f"export DATABASE_URL=mysql://root:{R}@localhost/db",
    ),
    # headers
    (
        "authorization_header",
        'curl -H "Authorization: Bearer abc.def.ghi" https://x.example.invalid',
        f'curl -H "Authorization: Bearer {R}" https://x.example.invalid',
    ),
    (
        "authorization_header",
        "curl -H 'Authorization: Basic Ym9iOmh1bnRlcjI=' https://x.example.invalid",
        f"curl -H 'Authorization: Basic {R}' https://x.example.invalid",
    ),
    ("authorization_header", "authorization: token abcdef123", f"authorization: token {R}"),
    ("authorization_header", "Proxy-Authorization: Basic Ym9iOnB3", f"Proxy-Authorization: Basic {R}"),
    ("authorization_header", '{"Authorization": "Bearer abc"}', f'{{"Authorization": "Bearer {R}"}}'),
    (
        "api_key_header",
        "curl -H 'X-Api-Key: abc123' https://x.example.invalid",
        f"curl -H 'X-Api-Key: {R}' https://x.example.invalid",
    ),
    ("api_key_header", "{'apiKey': 'abc', 'region': 'eu'}", f"{{'apiKey': '{R}', 'region': 'eu'}}"),
    (
        "api_key_header",
        'curl -H "PRIVATE-TOKEN: abc123" https://gitlab.example.invalid',
        f'curl -H "PRIVATE-TOKEN: {R}" https://gitlab.example.invalid',
    ),
    (
        "cookie",
        "curl -H 'Cookie: session=abc; csrf=def' https://x.example.invalid",
        f"curl -H 'Cookie: {R}' https://x.example.invalid",
    ),
    ("cookie", "Set-Cookie: sid=abc123; Path=/; HttpOnly", f"Set-Cookie: {R}"),
    # AWS
    ("aws_access_key_id", f"aws_access_key_id = {AWS_ID}", f"aws_access_key_id = {R}"),
    ("aws_access_key_id", f"key {AWS_STS_ID} used", f"key {R} used"),
    ("aws_secret_access_key", f"aws_secret_access_key = {AWS_SECRET}", f"aws_secret_access_key = {R}"),
    ("aws_secret_access_key", f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}", f"export AWS_SECRET_ACCESS_KEY={R}"),
    (
        "aws_secret_access_key",
        f"aws configure set aws_secret_access_key {AWS_SECRET}",
        f"aws configure set aws_secret_access_key {R}",
    ),
    # well-known shapes
    ("github_token", f"token is {GHP}.", f"token is {R}."),
    ("github_token", f"git push https://{GHS}@github.com/o/r", f"git push https://{R}@github.com/o/r"),
    ("github_token", f"using {GITHUB_PAT}", f"using {R}"),
    ("gitlab_token", f"glab auth login {GLPAT}", f"glab auth login {R}"),
    ("slack_token", f"slack: {SLACK}", f"slack: {R}"),
    (
        "slack_webhook",
        f"curl -X POST https://hooks.slack.com/services/{SLACK_HOOK_PATH}",
        f"curl -X POST https://hooks.slack.com/services/{R}",
    ),
    ("openai_api_key", f"client = OpenAI(api_key={OPENAI!r})", f"client = OpenAI(api_key='{R}')"),
    ("openai_api_key", f"key {OPENAI_PROJ} set", f"key {R} set"),
    ("anthropic_api_key", f"x {ANTHROPIC} y", f"x {R} y"),
    ("google_api_key", f"maps?key={GOOGLE}", f"maps?key={R}"),
    ("google_oauth", f"bearer {GOOGLE_OAUTH}", f"bearer {R}"),
    ("stripe_key", f"Stripe.api_key = {STRIPE}", f"Stripe.api_key = {R}"),
    ("stripe_key", f"restricted {STRIPE_RK}", f"restricted {R}"),
    ("jwt", f"id_token {JWT} end", f"id_token {R} end"),
    ("npm_token", f"npm token {NPM}", f"npm token {R}"),
    ("pypi_token", f"twine upload -p {PYPI} dist/*", f"twine upload -p {R} dist/*"),
    ("huggingface_token", f"huggingface-cli login --add {HF}", f"huggingface-cli login --add {R}"),
    ("private_key", f"cat key.pem\n{PEM}\ndone", f"cat key.pem\n{PEM_REDACTED}\ndone"),
    (
        "private_key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{R}\n-----END OPENSSH PRIVATE KEY-----",
    ),
    (
        "private_key",
        "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n(truncated)",
        f"-----BEGIN PRIVATE KEY-----\n{R}",
    ),
]

ORDINARY = [
    "the deploy key: see docs/keys.md for the key: path",
    "password: ",
    "note: the token: ${TOKEN} comes from the environment",
    "status: ok, mode: fast, retries: 3",
    'git commit -m "fix token parsing"',
    "git commit -m 'handle password reset and api key rotation'",
    "grep -r password src/",
    "grep -rn 'token=' src/",
    "rg --type py secret_key",
    "ls -la",
    "cd $PWD",
    "PWD=/tmp ./build.sh",
    "OLDPWD=/home/bob cd -",
    "export PATH=$PATH:/x",
    "export PATH=/usr/local/bin:$PATH",
    "pytest -k test_token",
    "pytest tests/test_password.py -q",
    "make KEY_FILE=path/to/key.pem",
    "export SSH_AUTH_SOCK=/tmp/ssh-agent.sock",
    "export GIT_ASKPASS=/usr/bin/askpass",
    "export AWS_SHARED_CREDENTIALS_FILE=~/.aws/credentials",
    "export GOOGLE_APPLICATION_CREDENTIALS=/etc/gcp/sa.json",
    "export TOKEN_URL=https://auth.example.com/token",
    "export GITHUB_TOKEN=$(gh auth token)",
    'export API_KEY="${API_KEY:-}"',
    "TOKEN=${{ secrets.TOKEN }} ./deploy",
    'curl -H "Authorization: Bearer $TOKEN" https://api.example.com',
    "curl -u $USER:$PASS https://x.example.invalid",
    "echo $PASSWORD | docker login -u bob --password-stdin",
    "cat ~/.pw | docker login --password-stdin",
    "aws ecr get-login-password | docker login --username AWS --password-stdin 1234.dkr.ecr.eu-west-1.amazonaws.com",
    "ssh-keygen -t ed25519",
    'ssh-keygen -t ed25519 -N "" -f ~/.ssh/id_ed25519',
    "ssh -p 2222 bob@host",
    "mysql -u root -p app",
    "mysql -h db -P 3306 -u root app",
    "mkdir -p /var/lib/mysql && chown mysql /var/lib/mysql",
    "docker run -p 8080:80 nginx",
    "docker login registry.example.com",
    "git push origin main",
    "git clone git@github.com:org/repo.git",
    "git clone https://github.com/org/repo.git",
    "ssh://git@host:22/org/repo.git",
    "curl -u bob https://x.example.invalid",
    "curl --user-agent 'Mozilla/5.0' https://x.example.invalid",
    "git show 3f786850e387550fdab836ed7e6dc881de23001b",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  empty.txt",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "request 123e4567-e89b-12d3-a456-426614174000 done",
    "pip install scikit-learn && python -m sklearn",
    "task-sk-1234567890abcdefghij created",
    "disk-abcdefghijklmnopqrstuvwxyz0123 full",
    "from huggingface_hub import hf_hub_download",
    "python -c 'import os; print(os.environ[\"API_KEY\"])'",
    "requests.post(url, json=payload, auth=auth)",
    "login(password=password, token=None)",
    '{"prompt_tokens": 12, "completion_tokens": 34, "total_tokens": 46}',
    '{"max_tokens": 1024, "key": "deploy", "sort_key": "name"}',
    "authorization: Optional[str] = None",
    "ansible-playbook --ask-pass site.yml",
    "ansible-playbook --vault-password-file ~/.vault site.yml",
    "docker buildx build --secret-file x .",
    "kubectl create secret generic db --from-file=./pw.txt",
    "passwd bob",
    "Password:",
    "Enter passphrase for key '/home/bob/.ssh/id_ed25519':",
    "The token expired; please log in again.",
    "https://example.com/path?page=2&sort=desc",
    "export KEY=value",
    "export PASS_THROUGH=1",
    "AUTH_BACKEND=ldap COOKIE_DOMAIN=example.com ./app",
    "CACHE_KEY=v1-deps ./ci",
    "git config credential.helper store",
    "npm config set registry https://registry.npmjs.org/",
    "    password: str",
    "    token: Optional[str] = None",
    "def login(password: str, token: str | None = None) -> None:",
    "api_key: ${API_KEY}",
    "secret: true",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----",
    "",
    "   ",
    "pytest -q\n....\n4 passed in 0.12s\n",
]


@pytest.mark.parametrize(
    ("kind", "text", "expected"), SECRET_CASES, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(SECRET_CASES)]
)
def test_secret_is_redacted(kind: str, text: str, expected: str) -> None:
    assert redact(text) == expected
    assert contains_secret(text)
    assert kind in find_secrets(text)
    assert kind in KINDS


@pytest.mark.parametrize(
    ("kind", "text", "expected"), SECRET_CASES, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(SECRET_CASES)]
)
def test_redaction_is_idempotent_and_leaves_nothing(kind: str, text: str, expected: str) -> None:
    once = redact(text)
    assert redact(once) == once
    assert not contains_secret(once)
    assert find_secrets(once) == []


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_unchanged(text: str) -> None:
    assert redact(text) == text
    assert not contains_secret(text), find_secrets(text)


def test_marker_is_one_documented_constant() -> None:
    assert REDACTED == "[REDACTED]"
    assert redact(REDACTED) == REDACTED
    assert not contains_secret(f"export TOKEN={REDACTED} && curl -H 'Authorization: Bearer {REDACTED}'")


def test_several_secrets_in_one_text() -> None:
    text = "\n".join(case[1] for case in SECRET_CASES)
    once = redact(text)
    assert once == "\n".join(case[2] for case in SECRET_CASES)
    assert redact(once) == once
    assert not contains_secret(once)
    kinds = find_secrets(text)
    assert len(kinds) == len(set(kinds))
    assert set(kinds) == {case[0] for case in SECRET_CASES}


def test_idempotent_on_random_mixtures() -> None:
    """Fragments glued in random orders (one rule's redaction can shift another's context)."""
    fragments = (
        ORDINARY
        + [case[1] for case in SECRET_CASES]
        + [
            '"',
            "'",
            "=",
            ":",
            " ",
            "\n",
            "|",
            ";",
            "@",
            "//",
            "-p",
            "--token",
            "\\",
            "\\n",
            R,
            "Bearer",
            "-----BEGIN RSA PRIVATE KEY-----",
            "-----END RSA PRIVATE KEY-----",
            "echo",
            "mysql",
            "curl -u",
            "#",
            "$",
        ]
    )
    rng = random.Random(1234)
    for _ in range(3000):
        text = "".join(rng.choice(fragments) for _ in range(rng.randint(1, 8)))
        once = redact(text)
        assert redact(once) == once, text
        assert find_secrets(once) == [], text


def test_secret_inside_json_string_keeps_json_valid() -> None:
    record = {"command": f'curl -H "Authorization: Bearer {GHP}" https://x.example.invalid', "key": PEM}
    dumped = json.dumps(record)
    cleaned = redact(dumped)
    assert GHP not in cleaned and PEM_BODY.splitlines()[0] not in cleaned
    loaded = json.loads(cleaned)
    assert loaded["command"] == f'curl -H "Authorization: Bearer {R}" https://x.example.invalid'
    assert loaded["key"] == PEM_REDACTED


def test_redact_value_nested() -> None:
    Point = namedtuple("Point", "x y")
    value = {
        "command": f"export GITHUB_TOKEN={GHP}",
        "env": {"PATH": "/usr/bin", "API_KEY": "plain-looking-value", "HOME": "/home/bob"},
        "headers": {"Authorization": "Bearer abc", "Accept": "application/json", "Cookie": "sid=1"},
        "password": 1234,
        "credentials": {"user": "bob", "pass": "x"},
        "private_key": PEM,
        "secret": None,
        "has_token": True,
        "token": "",
        "usage": {"prompt_tokens": 10, "max_tokens": 100},
        "outputs": ["url=https://bob:hunter2@host/x", ("ok", f"key {AWS_ID}"), {"nested": [{"accessToken": "t"}]}],
        "point": Point(1, "plain"),
        "tags": {"a", "b"},
        "raw": f"token={GHP}".encode(),
        "count": 3,
        "ratio": 0.5,
    }
    original = json.loads(json.dumps({k: v for k, v in value.items() if k not in ("point", "tags", "raw", "outputs")}))
    out = redact_value(value)
    assert out["command"] == f"export GITHUB_TOKEN={R}"
    assert out["env"] == {"PATH": "/usr/bin", "API_KEY": R, "HOME": "/home/bob"}
    assert out["headers"] == {"Authorization": R, "Accept": "application/json", "Cookie": R}
    assert out["password"] == R
    assert out["credentials"] == R
    assert out["private_key"] == R
    assert out["secret"] is None
    assert out["has_token"] is True
    assert out["token"] == ""
    assert out["usage"] == {"prompt_tokens": 10, "max_tokens": 100}
    assert out["outputs"] == [f"url=https://bob:{R}@host/x", ("ok", f"key {R}"), {"nested": [{"accessToken": R}]}]
    assert isinstance(out["point"], Point) and out["point"] == value["point"]
    assert out["tags"] == {"a", "b"}
    assert out["raw"] == f"token={R}".encode()
    assert out["count"] == 3 and out["ratio"] == 0.5
    # the input is not mutated
    assert {k: v for k, v in value.items() if k in original} == original
    # idempotent, and nothing secret left anywhere
    assert redact_value(out) == out
    assert not contains_secret(json.dumps(redact_value(json.loads(json.dumps(value, default=str)))))


@pytest.mark.parametrize(
    "key",
    [
        "password",
        "passwd",
        "secret",
        "token",
        "api_key",
        "apikey",
        "apiKey",
        "access_key",
        "private_key",
        "Authorization",
        "cookie",
        "credentials",
        "X-Api-Key",
        "client_secret",
        "GITHUB_TOKEN",
        "PGPASSWORD",
        "MYSQL_PWD",
        "DB_PASS",
        "refresh_token",
        "aws_secret_access_key",
        "set-cookie",
        "passphrase",
    ],
)
def test_secret_names(key: str) -> None:
    assert is_secret_name(key)
    assert redact_value({key: "v"}) == {key: R}


@pytest.mark.parametrize(
    "key",
    [
        "PWD",
        "OLDPWD",
        "PATH",
        "key",
        "sort_key",
        "public_key",
        "primary_key",
        "KEY_FILE",
        "token_count",
        "prompt_tokens",
        "max_tokens",
        "tokens",
        "secret_name",
        "password_file",
        "auth_type",
        "author",
        "tokenizer",
        "SSH_AUTH_SOCK",
        "GIT_ASKPASS",
        "token_url",
        "client_id",
        "is_secret",
        "password_stdin",
    ],
)
def test_non_secret_names(key: str) -> None:
    assert not is_secret_name(key)
    assert redact_value({key: "plain"}) == {key: "plain"}


def test_redact_value_cycles_and_odd_inputs_never_raise() -> None:
    loop: list = ["a"]
    loop.append(loop)
    assert redact_value(loop) == ["a", R]
    assert redact_value(object) is object
    deep: list = []
    cur = deep
    for _ in range(1000):
        nxt: list = []
        cur.append(nxt)
        cur = nxt
    redact_value(deep)  # does not raise
    assert redact_value(b"\xff\xfe token=abc") == "\ufffd\ufffd token=[REDACTED]".encode()


@pytest.mark.parametrize(
    "key", ["steps", "api_key", "password", "token_count", "max_tokens", "note", "password=hunter2x"]
)
@pytest.mark.parametrize(
    "value", [3, 2.5, True, None, "plain", "ghp_" + "a1B2" * 9, {"password": "x", "n": [1, "token=abc"]}]
)
def test_one_item_is_redacted_as_in_its_mapping(key: str, value) -> None:
    """The run store redacts a context value alone (`redact_item`) and skips the walk for numbers under kept names."""
    whole = redact_value({key: value})
    assert redact_item(key, value) == next(iter(whole.values()))
    if keeps_numbers_under(key) and type(value) in (int, float, bool):
        assert whole == {key: value}
    assert (
        keeps_numbers_under("steps")
        and not keeps_numbers_under("api_key")
        and not keeps_numbers_under("password=hunter2x")
    )


@pytest.mark.parametrize(
    "odd", [None, 12, b"export TOKEN=abc", "\x00\udcff", "=" * 1000, "--password", "-----BEGIN RSA PRIVATE KEY-----"]
)
def test_redact_never_raises(odd) -> None:
    out = redact(odd)
    assert isinstance(out, str)
    find_secrets(odd)
    contains_secret(odd)


def test_bytes_are_decoded() -> None:
    assert redact(b"export TOKEN=abc") == f"export TOKEN={R}"


def test_one_megabyte_runs() -> None:
    """A sanity check that a large log goes through (no timing assertion)."""
    chunk = "\n".join(ORDINARY + [case[1] for case in SECRET_CASES]) + "\n"
    text = (chunk * (1_000_000 // len(chunk) + 1))[:1_000_000]
    out = redact(text)
    assert GHP not in out and "hunter2" not in out
    assert isinstance(find_secrets(text), list)
    # pathological shapes: long runs with no separators, many '=' and ':'.
    for blob in ("a" * 1_000_000, "a=" * 500_000, "x:" * 500_000, "-----BEGIN RSA PRIVATE KEY-----" + "A" * 1_000_000):
        redact(blob)


# Redacts a 64 MB log in a child whose address space has room for the log but not for the copy a rule needs.
_STARVED = """
import json, resource
from sherpa_skills.redact import find_secrets, redact, redact_value
size = 64 * 1024 * 1024
text = "export DB_PASSWORD=hunter2secret\\n" + "x" * size
vm = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmSize:"))
resource.setrlimit(resource.RLIMIT_AS, (vm + size // 4, resource.RLIM_INFINITY))
out, kinds, value = redact(text), find_secrets(text), redact_value({"log": text})
resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
print(json.dumps({"out": out[:200], "length": len(out), "kinds": kinds, "value": value["log"][:200]}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/status are Linux's")
def test_a_rule_that_fails_redacts_the_whole_text() -> None:
    """Out of memory in the middle of the rules (a huge log): the marker alone comes back, never the original text."""
    done = subprocess.run([sys.executable, "-c", _STARVED], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout)
    assert (seen["out"], seen["length"]) == (R, len(R)), seen["out"][:80]
    assert seen["value"] == R and seen["kinds"] == ["unknown"]
