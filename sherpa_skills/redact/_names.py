"""Which names (variables, flags, headers, dict keys) say their value is secret, and how strongly."""

from __future__ import annotations

import re
from functools import lru_cache

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
