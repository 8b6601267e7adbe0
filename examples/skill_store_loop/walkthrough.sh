#!/usr/bin/env bash
# The skill-store loop by hand, self-contained: capture a procedure from a steps file, promote it, replay it as a dry
# run and for real, ask for it in other words, review a mined candidate, read the health. Everything it writes goes
# into a new temporary folder (the home and the notes it archives), never into the checkout:
#
#     bash examples/skill_store_loop/walkthrough.sh
#
# docs/how-to/skill-store.md walks through the same commands one at a time.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
export SHERPA_SKILLS_HOME="$work/home"  # a home of its own: your ~/.sherpa-skills is left alone
cd "$work"

newest() {  # the id of the newest procedure a listing shows (what a reader copies from the output)
  sherpa-skills learn "$@" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["id"])'
}

echo "== capture and promote"
sherpa-skills learn capture-success archive-notes --steps-file "$here/steps.yaml"
id="$(newest procedures)"
sherpa-skills learn promote "$id"

echo "== replay: a dry run, then for real"
mkdir notes && echo "standup at 10" > notes/monday.txt
sherpa-skills learn replay archive-notes --param name=weekly
sherpa-skills learn replay archive-notes --param name=weekly --execute --yes
tar -tzf build/weekly.tar.gz

echo "== the same task in other words: plausible, so it asks (exit 3), and the answer is remembered"
sherpa-skills learn replay "pack the notes" || test $? -eq 3
sherpa-skills learn replay "pack the notes" --procedure "$id" --param name=monthly
sherpa-skills learn aliases

echo "== a routine mined from a shell history waits for review"
sherpa-skills sessions import "$here/../sessions/bash_history"
candidate="$(newest candidates)"
sherpa-skills learn replay "$candidate" --procedure "$candidate" || test $? -eq 1  # a candidate never executes
sherpa-skills learn reject "$candidate"

echo "== health and stats"
sherpa-skills learn health
sherpa-skills learn stats
echo "everything this walk-through wrote is in $work"
