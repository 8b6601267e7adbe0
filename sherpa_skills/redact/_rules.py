"""The pattern table: each kind of secret as a pattern, with what of a match is replaced by the marker."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ._names import _NOT, _STRONG, _WEAK, _name_strength

#: The one replacement marker, whatever the kind of secret. Never itself taken for a secret, so
#: redaction is idempotent: ``redact(redact(x)) == redact(x)``.
REDACTED = "[REDACTED]"


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
