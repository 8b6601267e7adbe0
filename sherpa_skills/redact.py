"""Secret redaction for everything captured before it is stored: shell commands, session logs, action outputs.

`redact(text)` replaces secret values with :data:`REDACTED` and leaves everything else byte for byte
as it was; `redact_value(value)` does the same through dicts, lists, tuples and sets, and replaces
the whole value of any dict key that names a secret (``password``, ``api_key``, ``Authorization``...).
`find_secrets(text)` says which kinds of secret a text holds, `contains_secret(text)` whether it holds any.

One marker for every kind: ``[REDACTED]`` (:data:`REDACTED`). Names, users, hosts, schemes and quotes
around a value are kept, so a redacted command still reads as the command it was::

    export GITHUB_TOKEN=[REDACTED]
    curl -H "Authorization: Bearer [REDACTED]" https://api.example.com
    git clone https://oauth2:[REDACTED]@gitlab.example.com/group/repo.git
    mysql -u root -p[REDACTED] app

What is recognised (the kind names that `find_secrets` reports are in :data:`KINDS`):

* context: ``NAME=value`` / ``export NAME=value`` / ``-e NAME=value`` / ``?name=value&`` pairs and
  ``"name": "value"`` / ``name = 'value'`` quoted pairs, a YAML ``name: value`` line, and
  ``npm config set NAME VALUE`` (also yarn, pnpm, poetry, git, pip) whose name looks secret (see
  :func:`is_secret_name`); ``--password X`` / ``--token=X`` / ``--api-key X`` style long flags;
  ``scheme://user:password@host``; ``Authorization:`` / ``Proxy-Authorization:`` headers (the scheme,
  ``Bearer`` or ``Basic``..., is kept), API-key headers and ``Cookie:`` headers; ``curl -u user:pass``;
  ``mysql -pSECRET`` (glued form, mysql/mariadb tools only); ``sshpass -p X``; ``docker login -p X``;
  ``echo X | docker login --password-stdin`` (and ``--with-token``, ``passwd --stdin``, ``chpasswd``);
  openssl ``pass:X``; keytool ``-storepass X``; ``ssh-keygen -N X``; ``.netrc`` passwords;
  ``aws_secret_access_key = X`` (AWS credentials files and ``aws configure set``).
* shape: PEM private key blocks, AWS access key ids, GitHub, GitLab, Slack (tokens and webhooks),
  OpenAI, Anthropic, Google (API keys, OAuth tokens and client secrets), Stripe, npm, PyPI and
  Hugging Face tokens, JWTs.

What is deliberately left alone: ``$VAR`` / ``${VAR}`` / ``$(cmd)`` / ``{{ param }}`` references (no
secret is written there), ``PWD``/``OLDPWD`` (the working directory), names ending in ``_FILE``,
``_PATH``, ``_DIR``, ``_ID``, ``_URL``... (a path is not a secret), a file path given to a name that
is secret only because of ``KEY`` or ``CREDENTIALS`` (``GOOGLE_APPLICATION_CREDENTIALS=/x/sa.json``),
counts such as ``max_tokens``, hex digests, git SHAs and UUIDs, and the words themselves
(``grep -r password src/``, ``pytest -k test_token``).

Known limits: a boolean flag that looks secret and is followed by a positional argument
(``psql --password mydb``) has that argument redacted; an unquoted value stops at whitespace, a
quote, ``; & | < > ) }`` or a backslash, so a password holding one of those is cut there; a YAML
block scalar (``secret: |`` then indented lines) is not followed; an ``Authorization:`` or ``Cookie:``
in prose has the next word redacted.

Everything is precompiled; a megabyte of ordinary text takes a fraction of a second. Only ``str``
is handled (``redact`` decodes bytes as UTF-8 with replacement, other objects through ``str()``);
no function here raises: if something unexpected goes wrong the whole text is replaced by the marker
(failing closed).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

__all__ = [
    "KINDS",
    "REDACTED",
    "contains_secret",
    "find_secrets",
    "is_secret_name",
    "keeps_numbers_under",
    "redact",
    "redact_item",
    "redact_known",
    "redact_value",
]

#: The one replacement marker, whatever the kind of secret. Never itself taken for a secret, so
#: redaction is idempotent: ``redact(redact(x)) == redact(x)``.
REDACTED = "[REDACTED]"

# --- names --------------------------------------------------------------------------------------

#: A name part that makes a name secret by itself (strong: the value is never a path we keep).
_STRONG_WORDS = frozenset(
    {
        "TOKEN",
        "SECRET",
        "SECRETS",
        "PASSWORD",
        "PASSWORDS",
        "PASSWD",
        "PASSPHRASE",
        "APIKEY",
        "APIKEYS",
        "SECRETKEY",
        "ACCESSKEY",
        "PRIVATEKEY",
        "ACCESSTOKEN",
        "AUTHTOKEN",
        "CLIENTSECRET",
    }
)
#: Strong only as the last part: ``DB_PASS``, ``MYSQL_PWD``, ``BASIC_AUTH``, ``Set-Cookie`` are secret,
#: ``PASS_THROUGH``, ``AUTH_BACKEND``, ``COOKIE_DOMAIN`` are not.
_STRONG_LAST_WORDS = frozenset({"PASS", "PWD", "AUTH", "AUTHORIZATION", "COOKIE", "COOKIES"})
#: Parts that make a name secret but may legitimately hold a file path (kept when the value is one).
_WEAK_WORDS = frozenset({"CREDENTIALS", "CREDENTIAL", "CREDS"})
#: A part ending in one of these (``PGPASSWORD``, ``GHTOKEN``) is strong too.
_STRONG_SUFFIXES = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "APIKEY", "PASSPHRASE")
#: ``KEY`` alone (``key``, ``sort_key``, ``public_key``) is not secret; ``API_KEY``, ``SECRET_KEY``,
#: ``STRIPE_KEY`` are, unless the part before it is one of these.
_NON_SECRET_KEY_QUALIFIERS = frozenset(
    {
        "SORT",
        "CACHE",
        "PRIMARY",
        "FOREIGN",
        "PUBLIC",
        "PUB",
        "PARTITION",
        "ROUTING",
        "IDEMPOTENCY",
        "DEDUP",
        "DEDUPE",
        "DEDUPLICATION",
        "LOOKUP",
        "HASH",
        "RANGE",
        "OBJECT",
        "MAP",
        "DICT",
        "STATE",
        "CONTEXT",
        "GROUP",
        "ROW",
        "COLUMN",
        "INDEX",
        "UNIQUE",
        "COMPOSITE",
        "SHARD",
        "REGISTRY",
        "CONFIG",
        "SETTING",
        "SETTINGS",
        "ENTRY",
        "ITEM",
        "FIELD",
        "ATTR",
        "PROPERTY",
        "PROP",
        "STORE",
        "BUCKET",
        "SEARCH",
        "SEQUENCE",
        "SURROGATE",
        "NATURAL",
        "CLUSTER",
        "DISTRIBUTION",
        "TABLE",
        "DATA",
        "EVENT",
        "MESSAGE",
        "TASK",
        "JOB",
        "LOCK",
        "TRANSLATION",
        "LABEL",
        "TAG",
        "METRIC",
        "DIMENSION",
        "SPLIT",
        "SECONDARY",
        "NEXT",
        "PREV",
        "PREVIOUS",
        "LAST",
        "FIRST",
        "START",
        "END",
        "OFFSET",
        "CURSOR",
        "PAGE",
        "RESUME",
        "DICTIONARY",
        "RESULT",
        "OUTPUT",
        "INPUT",
        "BELIEF",
        "MEMORY",
        "PARAM",
        "PARAMETER",
        "ARG",
        "JOIN",
        "MERGE",
        "GROUPING",
        "CLUSTERING",
    }
)
#: Names whose last part is one of these hold no secret (a path, an id, a size, a switch...).
_SAFE_LAST = frozenset(
    {
        "FILE",
        "FILES",
        "FILENAME",
        "PATH",
        "PATHS",
        "DIR",
        "DIRS",
        "DIRECTORY",
        "ID",
        "IDS",
        "NAME",
        "NAMES",
        "TYPE",
        "TYPES",
        "KIND",
        "LEN",
        "LENGTH",
        "SIZE",
        "BITS",
        "ALGORITHM",
        "ALGORITHMS",
        "ALG",
        "ALGO",
        "FORMAT",
        "MODE",
        "HOST",
        "PORT",
        "URL",
        "URLS",
        "URI",
        "ENDPOINT",
        "USER",
        "USERNAME",
        "EXPIRY",
        "EXPIRES",
        "EXPIRATION",
        "TTL",
        "TIMEOUT",
        "LIFETIME",
        "REGION",
        "HEADER",
        "PREFIX",
        "SUFFIX",
        "CMD",
        "COMMAND",
        "HELPER",
        "PROVIDER",
        "METHOD",
        "SCOPE",
        "SCOPES",
        "FINGERPRINT",
        "SOCK",
        "SOCKET",
        "ENABLED",
        "REQUIRED",
        "DISABLED",
        "STDIN",
        "ENV",
        "VAR",
        "VARS",
        "VERSION",
        "COUNT",
        "LIMIT",
        "USAGE",
        "FIELD",
        "POLICY",
        "STRENGTH",
        "LOCATION",
        "ISSUER",
        "AUDIENCE",
        "HINT",
        "LABEL",
        "DESCRIPTION",
        "PATTERN",
        "REGEX",
        "PARAM",
        "ENCODING",
        "CHARSET",
        "LOCALE",
        "SCHEME",
        "STYLE",
        "STATUS",
        "LEVEL",
        "SET",
        "PRESENT",
        "EXISTS",
    }
)
#: Names with one of these parts anywhere hold no secret (counts, switches, prompts).
_SAFE_ANY = frozenset(
    {
        "MAX",
        "MIN",
        "NUM",
        "TOTAL",
        "PUBLIC",
        "IS",
        "HAS",
        "ASK",
        "NO",
        "USE",
        "WITH",
        "PROMPT",
        "SKIP",
        "ENABLE",
        "DISABLE",
        "REQUIRE",
        "SHOW",
    }
)
_NEVER_SECRET = frozenset({"PWD", "OLDPWD", "KEY", "KEYS"})

_CAMEL_1 = re.compile(r"([A-Z]+)([A-Z][a-z])")
_CAMEL_2 = re.compile(r"([a-z0-9])([A-Z])")
_NON_WORD = re.compile(r"[^A-Za-z0-9]+")

_NOT, _WEAK, _STRONG = 0, 1, 2


@lru_cache(maxsize=4096)
def _name_strength(name: str) -> int:
    """0: not secret; 1: secret but may hold a file path (KEY, CREDENTIALS); 2: secret."""
    norm = _NON_WORD.sub("_", _CAMEL_2.sub(r"\1_\2", _CAMEL_1.sub(r"\1_\2", name))).upper().strip("_")
    if not norm or norm in _NEVER_SECRET:
        return _NOT
    parts = [p for p in norm.split("_") if p]
    if parts[-1] in _SAFE_LAST or any(p in _SAFE_ANY for p in parts):
        return _NOT
    strength = _NOT
    if parts[-1] in _STRONG_LAST_WORDS:
        return _STRONG
    for i, part in enumerate(parts):
        if part in _STRONG_WORDS or (len(part) > 5 and part.endswith(_STRONG_SUFFIXES)):
            return _STRONG
        if part in _WEAK_WORDS:
            strength = _WEAK
        elif part in ("KEY", "KEYS") and i > 0 and parts[i - 1] not in _NON_SECRET_KEY_QUALIFIERS:
            strength = _WEAK
    return strength


def is_secret_name(name: str) -> bool:
    """Whether a variable, flag, header or dict key name says its value is secret.

    Case, ``-``/``.``/``_`` and camelCase are normalised into parts: secret when a part is a secret word
    (TOKEN, SECRET, PASSWORD, PASSWD, PASSPHRASE, APIKEY, CREDENTIALS, ``...TOKEN``/``...PASSWORD``
    run-ons like PGPASSWORD; PASS, PWD, AUTH, AUTHORIZATION, COOKIE only as the last part) or ``KEY`` qualified by
    something other than sort/cache/public/primary...; never for ``PWD``/``OLDPWD``, a bare ``key``,
    names ending in FILE/PATH/DIR/ID/NAME/TYPE/URL/COUNT... or holding MAX/NUM/TOTAL/IS/HAS/ASK/NO...
    """
    try:
        return isinstance(name, str) and _name_strength(name) != _NOT
    except Exception:  # pragma: no cover - defensive: never raise
        return False


# --- values -------------------------------------------------------------------------------------

_PATH_VALUE = re.compile(r"""^["']?(?:~|\.{1,2})?/[\w.\-/~+@%:]*["']?$""")
_LITERALS = frozenset({"none", "null", "nil", "true", "false", "undefined"})
#: Type annotations seen in source code (``authorization: Optional[str]``), not header values.
_ANNOTATION = re.compile(r"^(?:str|bytes|int|Any|dict|list|Optional\[[\w\[\], |.]*\]|str\|None|SecretStr)$")


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] in "\"'" and value[-1] == value[0]:
        return value[1:-1]
    return value


def _mask(value: str) -> str:
    """The marker, inside the value's own quotes when it had some."""
    if len(value) >= 2 and value[0] in "\"'" and value[-1] == value[0]:
        return value[0] + REDACTED + value[0]
    return REDACTED


def _keep_value(value: str, name: str | None = None, strength: int = _STRONG) -> bool:
    """True for values that hold no secret: empty, already redacted, a reference, a literal."""
    inner = _unquote(value).strip()
    if not inner or REDACTED in value:
        return True
    if not value.startswith("'") and (inner.startswith("$") or inner.startswith("%")):
        return True  # $VAR, ${VAR}, $(cmd), ${{ secrets.X }}, %VAR%
    if inner.startswith(("{{", "{%")):
        return True  # a template parameter, rendered later
    if value == inner and (inner.lower() in _LITERALS or (name is not None and inner.lower() == name.lower())):
        return True  # token=None, password=password (code, not a secret)
    if strength == _WEAK and _PATH_VALUE.match(value):
        return True
    return bool(_ANNOTATION.match(inner))


# --- rules --------------------------------------------------------------------------------------

Handler = Callable[["re.Match[str]"], "str | None"]


@dataclass(frozen=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    handler: Handler
    hints: tuple[str, ...] = ()  # lower-case substrings; the rule is skipped when none occurs


def _replace_group(m: re.Match[str], group: str = "value") -> str:
    """The whole match with one group replaced by the marker (in its quotes, if it had some)."""
    start, end = m.span(group)
    whole_start = m.start()
    s = m.group(0)
    return s[: start - whole_start] + _mask(m.group(group)) + s[end - whole_start :]


def _value(m: re.Match[str]) -> str | None:
    """Redact group `value` unless it is a reference, empty or already redacted."""
    if _keep_value(m.group("value")):
        return None
    return _replace_group(m)


def _named_value(m: re.Match[str]) -> str | None:
    """Redact group `value` when group `name` looks secret."""
    name = m.group("name")
    strength = _name_strength(name)
    if strength == _NOT or _keep_value(m.group("value"), name, strength):
        return None
    return _replace_group(m)


_HEADER_NAMES = re.compile(r"(?:^|[\W_])(?:proxy[\W_]?)?(?:authorization|auth|(?:set[\W_]?)?cookies?)$", re.IGNORECASE)


def _prose_named_value(m: re.Match[str]) -> str | None:
    """Redact group `value` when group `name` looks secret; headers (Authorization, Cookie) have rules of their own."""
    return None if _HEADER_NAMES.search(m.group("name")) else _named_value(m)


def _whole(m: re.Match[str]) -> str | None:
    """Replace the whole match (well-known token shapes)."""
    return None if REDACTED in m.group(0) else REDACTED


_EDGE = re.compile(r"^(?:\s|\\[nr])*")
_EDGE_END = re.compile(r"(?:\s|\\[nr])*$")


def _pem(m: re.Match[str]) -> str | None:
    """Keep the BEGIN/END lines and the line breaks (real or JSON-escaped) around the body."""
    body = m.group("body")
    lead = _EDGE.match(body).group(0)  # type: ignore[union-attr]
    trail = _EDGE_END.search(body[len(lead) :]).group(0)  # type: ignore[union-attr]
    if body[len(lead) : len(body) - len(trail)] == REDACTED:
        return None
    return f"{m.group('begin')}{lead or chr(10)}{REDACTED}{trail}{m.group('end') or ''}"


def _segment(inner: re.Pattern[str]) -> Handler:
    """Redact group `value` of every `inner` match within a command segment (e.g. after `mysql`)."""

    def handle(m: re.Match[str]) -> str | None:
        segment = m.group(0)
        out = inner.sub(lambda im: _value(im) or im.group(0), segment)
        return out if out != segment else None

    return handle


# Building blocks.
_DQ = r'"(?:[^"\\\n]|\\.)*"'
_SQ = r"'[^'\n]*'"
_BARE = r"""(?:[^\s'"\\&;|<>`)},]|,(?!\s))+"""  # unquoted: stops at blanks, quotes, shell operators
_VAL = rf"(?:{_DQ}|{_SQ}|{_BARE})"
_ARG = rf"""(?:{_DQ}|{_SQ}|[^\s'"\\&;|<>`]+)"""  # a command-line argument
_ARG_NOT_OPT = rf"""(?:{_DQ}|{_SQ}|(?![-=])[^\s'"\\&;|<>`]+)"""
_SEG = r"[^\n;&|]*"  # the rest of one simple command

_I = re.IGNORECASE

_RULES: tuple[_Rule, ...] = (
    # PEM private keys (RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP ... BLOCK); a truncated block to its end.
    _Rule(
        "private_key",
        re.compile(
            r"(?P<begin>-----BEGIN (?P<label>[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?)-----)"
            r"(?P<body>.*?)(?:(?P<end>-----END (?P=label)-----)|(?=-----BEGIN )|\Z)",
            re.DOTALL,
        ),
        _pem,
        ("private key",),
    ),
    # echo SECRET | docker login --password-stdin (also --with-token, passwd --stdin, chpasswd).
    _Rule(
        "piped_password",
        re.compile(
            r"(?P<pre>\b(?:echo(?:[ \t]+-[neE]+)*|printf(?:[ \t]+(?:'%s(?:\\n)?'|\"%s(?:\\n)?\"|%s))?)[ \t]+)"
            rf"(?P<value>{_ARG})"
            r"(?=\s*\|[^\n;&|]*?(?:--password-stdin|--with-token|--token-stdin|\bpasswd\s+--stdin|\bchpasswd\b))"
        ),
        _value,
        ("stdin", "chpasswd", "with-token"),
    ),
    _Rule(
        "piped_password",
        re.compile(rf"(?P<pre>(?:--password-stdin|--with-token|--token-stdin){_SEG}?<<<[ \t]*)(?P<value>{_ARG})"),
        _value,
        ("<<<",),
    ),
    # mysql -pSECRET (glued form only; `-p` alone prompts, `-P` is the port).
    _Rule(
        "mysql_password",
        re.compile(r"\b(?:mysql(?:dump|admin|import|show|check|pump|slap|binlog)?|mariadb(?:-[a-z]+)?)\b" + _SEG),
        _segment(re.compile(rf"(?<=\s)-p(?P<value>{_ARG})")),
        ("mysql", "mariadb"),
    ),
    # sshpass -p SECRET ssh ... (only sshpass's own -p, not the wrapped command's).
    _Rule(
        "sshpass_password",
        re.compile(rf"\bsshpass[ \t]+(?:-[fdP][ \t]*\S+[ \t]+|-[evhV][ \t]+)*?-p[ \t]*(?P<value>{_ARG})"),
        _value,
        ("sshpass",),
    ),
    # docker/podman/... login -p SECRET.
    _Rule(
        "docker_login_password",
        re.compile(r"\b(?:docker|podman|nerdctl|buildah|skopeo|oras|helm(?:\s+registry)?)\s+login\b" + _SEG),
        _segment(re.compile(rf"(?<=\s)-p(?:\s+|=)?(?P<value>{_ARG_NOT_OPT})")),
        ("login",),
    ),
    # curl -u user:password / --user user:password (the user is kept).
    _Rule(
        "basic_auth",
        re.compile(r"\bcurl\b" + _SEG),
        _segment(re.compile(r"""(?<=\s)(?:-u|--user)(?:\s+|=)?["']?[^\s:'"\\]*:(?P<value>[^\s'"\\]+)""")),
        ("curl",),
    ),
    # ssh-keygen -N / -P passphrase (an empty one, -N "", is kept as is).
    _Rule(
        "ssh_passphrase",
        re.compile(r"\bssh-keygen\b" + _SEG),
        _segment(re.compile(rf"(?<=\s)-[NP]\s*(?P<value>{_ARG_NOT_OPT})")),
        ("ssh-keygen",),
    ),
    # openssl -passin pass:SECRET, -passout, -pass, -password.
    _Rule(
        "openssl_password",
        re.compile(rf"(?<=\s)-(?:passin|passout|pass|password|passwd)[ \t]+[\"']?pass:(?P<value>{_ARG})"),
        _value,
        ("pass:",),
    ),
    # keytool -storepass SECRET, and single-dash -password/-passwd flags (java tools).
    _Rule(
        "password_flag",
        re.compile(
            rf"(?<=\s)-(?:storepass|keypass|srcstorepass|deststorepass|srckeypass|destkeypass|password|passwd)"
            rf"(?:[ \t]+|=)(?P<value>{_ARG_NOT_OPT})"
        ),
        _value,
        ("pass",),
    ),
    # --password X, --password=X, --token X, --api-key X, --client-secret X ... (by name).
    _Rule(
        "secret_flag",
        re.compile(rf"(?<![\w-])--(?P<name>[A-Za-z][\w.\-]*)(?:=|[ \t]+)(?P<value>{_ARG_NOT_OPT})"),
        _named_value,
        ("--",),
    ),
    # scheme://user:password@host (user and host kept; redis://:password@host too).
    _Rule(
        "url_password",
        re.compile(r"""\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/?#@'"\\]*:(?P<value>[^\s/?#@'"\\]+)(?=@)"""),
        _value,
        ("://",),
    ),
    # Authorization: Bearer X / Basic X / token X / X  (also Proxy-Authorization, JSON/dict forms).
    _Rule(
        "authorization_header",
        re.compile(
            r"""\b(?:proxy-)?authorization["']?[ \t]*:[ \t]*["']?"""
            r"(?:(?:bearer|basic|token|digest|negotiate|ntlm|apikey|api-key|sso-key|otp|aws4-hmac-sha256|jwt)[ \t]+)?"
            r"""(?P<value>(?!(?:bearer|basic|token|digest|negotiate|ntlm)\b)[^\s'"\\,]+)""",
            _I,
        ),
        _value,
        ("authorization",),
    ),
    # API-key style headers.
    _Rule(
        "api_key_header",
        re.compile(
            r"(?<![\w-])(?:x-api-key|x-auth-token|x-access-token|x-api-token|private-token|job-token|"
            r"x-gitlab-token|x-vault-token|x-goog-api-key|x-functions-key|api-key|apikey|x-apikey|"
            r"""anthropic-api-key|openai-api-key)["']?[ \t]*:[ \t]*["']?(?P<value>[^\s'"\\,]+)""",
            _I,
        ),
        _value,
        ("key", "token"),
    ),
    # Cookie: a=b; c=d  (and Set-Cookie).
    _Rule(
        "cookie",
        re.compile(r"""(?<![\w-])(?:set-)?cookie["']?[ \t]*:[ \t]*["']?(?P<value>[^\r\n'"\\]+)""", _I),
        _value,
        ("cookie",),
    ),
    # .netrc: machine host login user password SECRET
    _Rule("netrc_password", re.compile(rf"\blogin\s+\S+\s+password\s+(?P<value>{_ARG})"), _value, ("password",)),
    # AWS credentials files and `aws configure set aws_secret_access_key X`.
    _Rule(
        "aws_secret_access_key",
        re.compile(
            rf"\b(?:aws_)?(?:secret_access_key|session_token|security_token)\b[ \t]*[=:][ \t]*(?P<value>{_VAL})", _I
        ),
        _value,
        ("secret_access_key", "session_token", "security_token"),
    ),
    _Rule(
        "aws_secret_access_key",
        re.compile(
            r"\baws_(?:secret_access_key|session_token|security_token)[ \t]+[\"']?"
            r"(?P<value>[A-Za-z0-9/+=]{40,})",
            _I,
        ),
        _value,
        ("aws_",),
    ),
    # Well-known token shapes.
    _Rule(
        "aws_access_key_id",
        re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
        _whole,
        ("akia", "asia", "abia", "acca"),
    ),
    _Rule(
        "github_token",
        re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
        _whole,
        ("gh", "github_pat_"),
    ),
    _Rule(
        "gitlab_token",
        re.compile(r"(?<![\w-])gl(?:pat|dt|rt|ptt|cbt|oas|ft|imt|soat|agent|ffct)-[A-Za-z0-9_\-]{20,}"),
        _whole,
        ("gl",),
    ),
    _Rule(
        "slack_token",
        re.compile(r"(?<![\w-])(?:xox[abposr]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,})"),
        _whole,
        ("xox", "xapp-"),
    ),
    _Rule(
        "slack_webhook",
        re.compile(r"(?<=hooks\.slack\.com/)(?:services|workflows|triggers)/(?P<value>[A-Za-z0-9/_\-]{8,})"),
        _value,
        ("hooks.slack.com",),
    ),
    _Rule("anthropic_api_key", re.compile(r"(?<![\w-])sk-ant-[A-Za-z0-9_\-]{20,}"), _whole, ("sk-ant-",)),
    _Rule(
        "openai_api_key",
        re.compile(
            r"(?<![\w-])sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{20,}"
            r"|(?=[A-Za-z]*[0-9])(?=[0-9]*[A-Za-z])[A-Za-z0-9]{20,})"
        ),
        _whole,
        ("sk-",),
    ),
    _Rule("google_api_key", re.compile(r"(?<![\w-])AIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])"), _whole, ("aiza",)),
    _Rule(
        "google_oauth",
        re.compile(r"(?<![\w-])(?:ya29\.[0-9A-Za-z_\-]{20,}|GOCSPX-[0-9A-Za-z_\-]{20,})"),
        _whole,
        ("ya29.", "gocspx-"),
    ),
    _Rule(
        "stripe_key",
        re.compile(r"(?<![\w-])(?:(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{10,}|whsec_[0-9A-Za-z]{20,})"),
        _whole,
        ("_live_", "_test_", "whsec_"),
    ),
    _Rule("npm_token", re.compile(r"(?<![\w-])npm_[A-Za-z0-9]{36,}"), _whole, ("npm_",)),
    _Rule("pypi_token", re.compile(r"(?<![\w-])pypi-AgE[A-Za-z0-9_\-]{50,}"), _whole, ("pypi-age",)),
    _Rule(
        "huggingface_token", re.compile(r"(?<![\w-])hf_(?=[A-Za-z]*[0-9])[A-Za-z0-9]{30,}(?![\w-])"), _whole, ("hf_",)
    ),
    _Rule(
        "jwt", re.compile(r"(?<![\w-])eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*"), _whole, ("eyj",)
    ),
    # npm/yarn/pnpm/poetry/git/pip config [set] NAME VALUE, when NAME is secret (//registry/:_authToken).
    _Rule(
        "config_set",
        re.compile(
            r"\b(?:npm|yarn|pnpm|poetry|git|pip)[ \t]+config(?:[ \t]+-{1,2}[\w-]+)*[ \t]+(?:set[ \t]+)?"
            rf"(?P<name>[^\s=]+)[ \t]+(?P<value>{_ARG_NOT_OPT})"
        ),
        _named_value,
        ("config",),
    ),
    # NAME=value: env assignments (export, env, docker -e, make), query strings, key=value logs.
    _Rule(
        "secret_assignment",
        re.compile(rf"(?<![^\s;&|(?#,{{\[:'\"`])(?P<name>[A-Za-z_][\w.\-]*)=(?P<value>{_VAL})"),
        _named_value,
        ("=",),
    ),
    # "name": "value", 'name': 'value', name = "value", name: 'value' (JSON, YAML, INI, Python, repr).
    _Rule(
        "secret_assignment",
        re.compile(
            rf"""(?<![\w.\-])(?P<q>["']?)(?P<name>[A-Za-z_][\w.\-]*)(?P=q)[ \t]*(?:=>|[:=])[ \t]*"""
            rf"""(?P<value>{_DQ}|'(?:[^'\\\n]|\\.)*')"""
        ),
        _named_value,
        ("=", ":"),
    ),
    # YAML, one `name: value` per line, unquoted (`password: hunter2`, `- token: abc  # ci`).
    _Rule(
        "secret_assignment",
        re.compile(
            r"^(?P<indent>[ \t]*(?:-[ \t]+)?)(?P<name>[A-Za-z_][\w.\-]*):[ \t]+"
            r"(?P<value>[^\s'\"#&*!|>{\[][^\s#]*)[ \t]*(?:#.*)?$",
            re.MULTILINE,
        ),
        _named_value,
        (":",),
    ),
    # `… password: hunter2 …` inside a line of prose or a log message (names secret by themselves only).
    # A value is one word, not a type (`token: Optional[str]`, `password: str = ...` in code are kept).
    _Rule(
        "secret_assignment",
        re.compile(
            r"""(?<![\w.\-])(?P<name>[A-Za-z_][\w.\-]*):[ \t]+"""
            r"""(?!(?:str|int|bool|float|bytes|None|Optional|Any|SecretStr|string|null|true|false)\b)"""
            r"""(?P<value>[^\s'"`#,;()<>{}\[\]]+)(?=[\s'"`#,;)}\]]|$)"""
        ),
        _prose_named_value,
        (":",),
    ),
)

#: Every kind `find_secrets` can report, in the order the rules run.
KINDS: tuple[str, ...] = tuple(dict.fromkeys(rule.kind for rule in _RULES))


_MAX_PASSES = 4


def _run(text: str, kinds: list[str] | None) -> str:
    """Apply every rule; repeat while a pass changed something (one rule's redaction can move another's
    context, e.g. a `;` inside a redacted cookie ended a command segment), so the result is a fixpoint."""
    for _ in range(_MAX_PASSES):
        text, changed = _pass(text, kinds)
        if not changed:
            break
    return text


def _pass(text: str, kinds: list[str] | None) -> tuple[str, bool]:
    changed = False
    lowered = text.lower()
    for rule in _RULES:
        if rule.hints and not any(h in lowered for h in rule.hints):
            continue
        hit = False

        def sub(m: re.Match[str], _rule: _Rule = rule) -> str:
            nonlocal hit
            replacement = _rule.handler(m)
            if replacement is None or replacement == m.group(0):
                return m.group(0)
            hit = True
            return replacement

        new = rule.pattern.sub(sub, text)
        if hit:
            text = new
            lowered = text.lower()
            changed = True
            if kinds is not None and rule.kind not in kinds:
                kinds.append(rule.kind)
    return text, changed


def _as_text(text: Any) -> str:
    if isinstance(text, str):
        return text
    if isinstance(text, (bytes, bytearray, memoryview)):
        return bytes(text).decode("utf-8", errors="replace")
    if text is None:
        return ""
    return str(text)


def redact(text: str) -> str:
    """`text` with every secret value replaced by :data:`REDACTED`; everything else unchanged.

    Idempotent. Never raises: bytes are decoded as UTF-8 (with replacement), other objects go through
    ``str()``, and if anything unexpected fails the whole text becomes the marker.
    """
    try:
        text = _as_text(text)
        if not text:
            return text
        if len(text) <= _CACHED_LENGTH:
            return _redact_short(text)
        return _run(text, None)
    except Exception:
        return REDACTED


# Keys and short values repeat across every stored row ("command", "exit_code", "ok"): remember them.
_CACHED_LENGTH = 160


@lru_cache(maxsize=8192)
def _redact_short(text: str) -> str:
    return _run(text, None)


def find_secrets(text: str) -> list[str]:
    """The kinds of secret in `text` (names from :data:`KINDS`), each once, in rule order; [] when clean.

    Exactly the kinds `redact` would replace, so ``find_secrets(redact(x)) == []``. Never raises (an
    unexpected failure reports ``["unknown"]``, failing closed).
    """
    try:
        text = _as_text(text)
        kinds: list[str] = []
        if text:
            _run(text, kinds)
        return kinds
    except Exception:
        return ["unknown"]


def contains_secret(text: str) -> bool:
    """Whether `redact(text)` would change anything. Never raises (fails closed: True)."""
    return bool(find_secrets(text))


_MAX_DEPTH = 200
_PLAIN_NUMBERS = frozenset({int, float, bool, type(None)})


def redact_value(value: Any) -> Any:
    """`value` with secrets redacted, recursing into dicts, lists, tuples, sets and frozensets.

    Strings go through :func:`redact` (dict keys too); bytes are decoded, redacted and re-encoded
    when they change. A dict key that names a secret (see :func:`is_secret_name`: password, passwd,
    secret, token, api_key, apikey, access_key, private_key, authorization, cookie, credentials...)
    has its whole value replaced by :data:`REDACTED`, whatever its type, except None, booleans and
    empty strings (nothing to hide) and a file path under a KEY/CREDENTIALS name. Other objects are
    returned as they are: dump models to plain data first. Returns new containers; never mutates
    `value`; never raises (a cycle or a nesting deeper than 200 becomes the marker).
    """
    try:
        return _redact_value(value, 0, set())
    except Exception:
        return REDACTED


@lru_cache(maxsize=4096)
def keeps_numbers_under(key: str) -> bool:
    """Whether `redact_value` keeps this mapping key as it is, and a number under it (a counter's name, say)."""
    return _key_strength(key) == _NOT and redact(key) == key


def redact_item(key: Any, value: Any) -> Any:
    """`value` as `redact_value` leaves it under `key` in a mapping (whole value replaced when
    the key names a secret)."""
    try:
        return REDACTED if _secret_key_value(key, value) else _redact_value(value, 0, set())
    except Exception:
        return REDACTED


@lru_cache(maxsize=4096)
def _key_strength(key: str) -> int:
    return _name_strength(key)


def _secret_key_value(key: Any, value: Any) -> bool:
    if not isinstance(key, str) or value is None or isinstance(value, bool) or value == "":
        return False
    strength = _key_strength(key)
    if strength == _NOT:
        return False
    if isinstance(value, str) and (value == REDACTED or (strength == _WEAK and _PATH_VALUE.match(value))):
        return False
    return True


def _redact_value(value: Any, depth: int, active: set[int]) -> Any:
    kind = type(value)
    if kind is str:
        return redact(value)
    if kind in _PLAIN_NUMBERS:  # exact types first: the stored rows are mostly these, and ABC checks are slow
        return value
    if isinstance(value, str):
        return redact(value)
    if value is None or isinstance(value, (bool, int, float, complex)):
        return value
    if isinstance(value, (bytes, bytearray)):
        try:
            decoded = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            decoded = bytes(value).decode("utf-8", errors="replace")
        cleaned = redact(decoded)
        if cleaned == decoded:
            return value
        return type(value)(cleaned.encode("utf-8"))
    if not isinstance(value, (dict, list, Mapping, tuple, set, frozenset)):
        return value
    if depth >= _MAX_DEPTH or id(value) in active:
        return REDACTED
    active.add(id(value))
    try:
        if isinstance(value, dict) or isinstance(value, Mapping):
            out: dict[Any, Any] = {}
            for k, v in value.items():
                new_key = redact(k) if isinstance(k, str) else k
                out[new_key] = REDACTED if _secret_key_value(k, v) else _redact_value(v, depth + 1, active)
            return out
        items = [_redact_value(v, depth + 1, active) for v in value]
        if isinstance(value, list):
            return items
        if isinstance(value, tuple):
            if hasattr(value, "_fields"):  # namedtuple
                try:
                    return type(value)(*items)
                except Exception:
                    return tuple(items)
            return tuple(items)
        try:
            return type(value)(items)
        except TypeError:  # an unhashable item came back (cannot happen for str); keep a list
            return items
    finally:
        active.discard(id(value))


@lru_cache(maxsize=64)
def _known_pattern(secrets: frozenset[str]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(s) for s in sorted(secrets, key=len, reverse=True)))


def redact_known(value: Any, secrets: frozenset[str]) -> Any:
    """`value` with every occurrence of these exact strings (values known to be secret, such as the environment
    variables passed to a command) replaced by :data:`REDACTED`, through dicts, lists and tuples. Never mutates."""
    if not secrets:
        return value
    pattern = _known_pattern(secrets)

    def scrub(item: Any) -> Any:
        if isinstance(item, str):
            return pattern.sub(REDACTED, item)
        if isinstance(item, Mapping):
            return {scrub(k): scrub(v) for k, v in item.items()}
        if isinstance(item, (list, tuple)):
            return [scrub(v) for v in item] if isinstance(item, list) else tuple(scrub(v) for v in item)
        return item

    return scrub(value)
