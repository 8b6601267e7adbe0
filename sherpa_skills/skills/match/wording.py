"""What a wording says, with how it is said folded away: the key words two tellings of one task share.

"run the db migrations on staging" and "run the database migrations on staging" ask the same thing; so do "rebase the
feature branch onto latest main and force-push it" and "rebase my feature branch on the latest main and force push".
The fold is general, never fitted to sentences: function words (the matcher's stop words and the rest of a standard
English list: sklearn's, e.g. "onto", "already", "upon"), standard abbreviations spelled out (db, docs, config, dir,
repo, env…), plural and possessive endings, and numbers (written or spelled) left to the literal check, which compares
them with their units. Words that change what is asked stay: negations ("not", "without", "except") and directions
("before", "after", "more", "less", "up", "down").

Verbs that name one action (`SYNONYMS`: "remove" and "erase" are "delete", "display" is "show") are folded too; a
key word swapped for another is otherwise a change of what is asked, and some swaps turn it around (`contrast`:
"stop" for "start", "decompress" for "compress", "find" for "delete": a verb that looks for one that destroys).
Meaning alone cannot tell these apart: MiniLM puts "enable" and "disable" closer (0.73) than "run" and "execute"
(0.41), so the contrast is read from the words.

A task may also say a description with fewer words — a pronoun for the object, the trailing clause left out
(`says_less`): "deploy it and restart the service" for "deploy the proxy configuration and restart the service".
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

from ..store.params import PARAMETER
from .similarity import STOP_WORDS

# Standard function words the matcher's stop-word list leaves out (all in sklearn's ENGLISH_STOP_WORDS).
_MORE_FUNCTION_WORDS = frozenset(
    """onto upon already yet across along among amongst toward towards whereas besides else thereby therefore thus
    hence afterwards meanwhile moreover nevertheless otherwise somehow sometime sometimes somewhere anyway anywhere
    everywhere whenever wherever whether though although throughout via etc us let lets it's i'm""".split()
)
# Words that change what is asked, kept even where a stop-word list drops them.
_MEANINGFUL = frozenset(
    """no not nor never none neither without except only before after above below over under more most less fewer
    few up down off out""".split()
)
_IGNORED = (STOP_WORDS | _MORE_FUNCTION_WORDS) - _MEANINGFUL
# Words that open a clause narrowing or widening what is acted on ("… excluding CVS", "… including the folder
# itself"): left out, the task asks about other things, where a further step left out ("… and restart it") does not.
_SCOPING = frozenset("excluding including ignoring unless except".split())
# Abbreviations everyone writes for the same word (one spelling each; never a domain's own jargon).
ABBREVIATIONS = {
    "db": "database",
    "dbs": "database",
    "doc": "documentation",
    "docs": "documentation",
    "config": "configuration",
    "conf": "configuration",
    "cfg": "configuration",
    "configs": "configuration",
    "dir": "directory",
    "dirs": "directory",
    "folder": "directory",
    "repo": "repository",
    "repos": "repository",
    "env": "environment",
    "envs": "environment",
    "pkg": "package",
    "pkgs": "package",
    "img": "image",
    "msg": "message",
    "msgs": "message",
    "info": "information",
    "prod": "production",
    "auth": "authentication",
    "creds": "credentials",
    "deps": "dependencies",
    "tmp": "temporary",
    "temp": "temporary",
    "app": "application",
    "apps": "application",
    "k8s": "kubernetes",
    "pw": "password",
    "pwd": "password",
    "passwd": "password",
    "num": "number",
    "vm": "virtual machine",
    "vms": "virtual machine",
    "cert": "certificate",
    "certs": "certificate",
    "stats": "statistics",
    "admin": "administrator",
    "dev": "development",
    "ci": "continuous integration",
}
# Verbs that name one action on a computer, whatever the task (one spelling each); never words that differ in scope
# or in what is acted on ("list"/"show", "make"/"build" are left apart).
SYNONYMS = {
    "remove": "delete",
    "erase": "delete",
    "display": "show",
    "view": "show",
    "execute": "run",
    "launch": "start",
    "duplicate": "copy",
    "terminate": "kill",
    "locate": "find",
    "search": "find",
}
# Pairs of words that turn a task around: said in place of one another, the task asks the opposite work.
_OPPOSITES = (
    "start stop,enable disable,connect disconnect,mount unmount,install uninstall,lock unlock,compress decompress,"
    "encrypt decrypt,zip unzip,upload download,import export,push pull,add delete,create delete,show hide,open close,"
    "increase decrease,newer older,newest oldest,first last,minimum maximum,min max,local remote,read write,"
    "include exclude,allow deny,grant revoke,input output,upper lower,uppercase lowercase,ascending descending,"
    "largest smallest,biggest smallest,archive restore,backup restore,freeze unfreeze,pause resume,attach detach,"
    "block unblock,hide unhide,follow unfollow,subscribe unsubscribe,merge split,encode decode,pack unpack"
)
OPPOSITES = frozenset(frozenset(pair.split()) for pair in _OPPOSITES.split(","))
# Verbs that only look and verbs that destroy (after `SYNONYMS`): one said for the other asks the opposite work too, and
# a destroying procedure must never replay for a task that asked to look ("delete files in /var/log modified more than
# 60 minutes ago" replayed a `find` of them; the other way round it would delete what someone asked to list).
_LOOKING = frozenset("find list show print count get check".split())
_DESTROYING = frozenset("delete kill truncate wipe purge drop overwrite shred".split())
# Prefixes that make a word's opposite ("unmount", "disable", "decrypt", "nonempty").
_NEGATING_PREFIXES = ("un", "dis", "de", "non")
_NUMBER_WORDS = frozenset(
    """zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen
    eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million""".split()
)
_TOKEN = re.compile(r"[a-z0-9][a-z0-9_']*")


def _stem(word: str) -> str:
    """Plural and possessive endings only: "imports" is "import", "month's" is "month"; never a root's own s."""
    word = word.removesuffix("'s").rstrip("'")
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _folded(text: str, synonyms: bool = True) -> Iterator[str]:
    """The key words of a text in the order said, folded (see the module's docstring)."""
    for token in _TOKEN.findall(PARAMETER.sub(" ", text.lower())):
        if token in _IGNORED or token in _NUMBER_WORDS or token[0].isdigit():
            continue
        for word in ABBREVIATIONS.get(token, token).split():
            word = _stem(ABBREVIATIONS.get(word, word))
            word = SYNONYMS.get(word, word) if synonyms else word
            if word and word not in _IGNORED:
                yield word


def key_words(text: str) -> frozenset[str]:
    """The words that say what is asked, folded (see the module's docstring); `{{ params }}` and numbers left out."""
    return frozenset(_folded(text))


def leading_word(text: str) -> str | None:
    """The first key word of a text: in a description written as an instruction, what is done ("deploy")."""
    return next(_folded(text), None)


def same_wording(a: frozenset[str], b: frozenset[str]) -> bool:
    """Two folded wordings ask the same thing: the same key words, and enough of them to mean something."""
    return len(a) >= 2 and a == b


def says_less(said: frozenset[str], description: str) -> bool:
    """A task that says a description with fewer words ("deploy it and restart the service", "deploy the proxy
    config" for "deploy the proxy configuration and restart the service"): every key word it says is the
    description's, it keeps the description's lead (what is done) and at least half of its key words (fewer name
    a step, not the task: "restart the service"), and what it leaves out changes nothing about what is asked — no
    negation or direction ("list files owned by root" is not "list files not owned by root"), no clause that
    narrows or widens what is acted on ("… excluding CVS")."""
    described = key_words(description)
    if len(said) < 2 or not said < described or 2 * len(said) < len(described):
        return False
    return leading_word(description) in said and not (described - said) & (_MEANINGFUL | _SCOPING)


@lru_cache(maxsize=1 << 16)  # asked for every pair of words two candidates' descriptions differ by, at every match
def opposite(a: str, b: str) -> bool:
    """Two key words that turn a task around when one is said for the other ("stop"/"start", "unmount"/"mount")."""
    if frozenset((a, b)) in OPPOSITES:
        return True
    if (a in _LOOKING and b in _DESTROYING) or (a in _DESTROYING and b in _LOOKING):
        return True
    return any(x == p + y for x, y in ((a, b), (b, a)) for p in _NEGATING_PREFIXES if len(y) >= 3)


_NEGATIONS = frozenset("no not nor never none neither without except excluding exclude ignoring unless".split())
# Words of direction or amount: a negation said with one of these changed re-expresses the task ("not accessed in the
# last 30 days" is "accessed more than 30 days ago"), where a bare negation turns it around.
_DIRECTIONS = _MEANINGFUL - _NEGATIONS


def contrast(said: frozenset[str], described: frozenset[str]) -> tuple[str, str] | None:
    """The word a task says in place of its opposite in the description (said, described; "" for a negation one side
    leaves out), or None: a near twin that asks the opposite work, whatever its meaning's closeness ("stop the web
    server" for "start the web server", "files owned by root" for "files not owned by root")."""
    swapped = next(((a, b) for a in sorted(said - described) for b in sorted(described - said) if opposite(a, b)), None)
    negated, denied = said & _NEGATIONS, described & _NEGATIONS
    if bool(negated) != bool(denied):
        # A negation with an opposite or a changed direction says the same thing the other way round: "not older
        # than" is "newer than".
        redirected = (said ^ described) & _DIRECTIONS
        return None if swapped or redirected else (min(negated, default=""), min(denied, default=""))
    return swapped


def wording_key(text: str) -> str:
    """The form answers (aliases, rejections) are keyed by: the sorted key words, else the plain lower-cased text."""
    folded = key_words(text)
    return " ".join(sorted(folded)) if folded else "=" + " ".join(text.lower().split())


def earlier_key(text: str) -> str:
    """The key answers were stored under before verbs were folded (`SYNONYMS`): a rejection remembered then still
    holds."""
    folded = frozenset(_folded(text, synonyms=False))
    return " ".join(sorted(folded)) if folded else "=" + " ".join(text.lower().split())


#: Words that say what kind of answer is asked for: stop words to folding, yet "how can I verify my identity" and
#: "why do I need to verify my identity" ask different things (two intents of BANKING77's, one key-word set).
QUESTION_WORDS = frozenset("how why what when where which who whom whose".split())


def asked_alike(a: str, b: str) -> bool:
    """Two wordings ask the same kind of question: the same question words, or none in either."""
    return QUESTION_WORDS.intersection(spoken(a)) == QUESTION_WORDS.intersection(spoken(b))


def spoken(text: str) -> list[str]:
    """Every word as said, in order (no folding): what `verbatim` compares."""
    return re.findall(r"[a-z0-9]+", text.lower())


def verbatim(a: list[str], b: list[str]) -> float:
    """The longest run of words two texts say alike, in order, as a share of the shorter text. Two descriptions
    written from the same words share a long run; two people describing the same work seldom do."""
    if not a or not b:
        return 0.0
    longest, previous = 0, [0] * (len(b) + 1)
    for word in a:
        current = [0] * (len(b) + 1)
        for j, other in enumerate(b, 1):
            if word == other:
                current[j] = previous[j - 1] + 1
                longest = max(longest, current[j])
        previous = current
    return longest / min(len(a), len(b))
