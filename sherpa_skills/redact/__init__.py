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

from ._names import is_secret_name
from ._rules import KINDS, REDACTED
from ._text import contains_secret, find_secrets, redact
from ._values import keeps_numbers_under, redact_item, redact_known, redact_value

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
