#!/usr/bin/env bash
# A newcomer's first hour, timed: the README's steps on a fresh clone, with a temporary HOME
# (no pip cache of ours, no shell profile), on documents nobody on the team wrote.
#
#   benchmarks/newcomer.sh [REPO] [DOCS...]
#
# REPO: what to clone (default: this checkout). DOCS: the files to ask about (default: the
# first SEC 10-Q PDF of ../shared/data/sec10q/docs). Each step prints its duration; a step that
# fails stops the script with its exit code. The figures of one run are in benchmarks/README.md.
# PIP_CACHE_DIR is kept when set (the package registry is the only network this needs).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPO="${1:-$HERE}"
shift || true
if [ "$#" -gt 0 ]; then
    DOCS=("$@")
else
    DOCS=("$(ls "$HERE"/../shared/data/sec10q/docs/*.pdf | head -1)")
fi

WORK="$(mktemp -d -t thoth-newcomer-XXXXXX)"
export HOME="$WORK/home"
mkdir -p "$HOME"
echo "newcomer: $WORK (HOME=$HOME), repo $REPO, $(nproc) CPUs"

declare -a NAMES=() SECONDS_TAKEN=()
step() {
    local name="$1"
    shift
    echo "== $name: $*"
    local began
    began=$(date +%s.%N)
    "$@"
    local took
    took=$(echo "$(date +%s.%N) - $began" | bc)
    NAMES+=("$name")
    SECONDS_TAKEN+=("$took")
    printf '   %s took %.1f s\n' "$name" "$took"
}

cd "$WORK"
step "clone" git clone -q "$REPO" thoth
cd thoth
step "make demo (setup + demo)" make demo
# The README's next line: put tht on the PATH for this shell.
# shellcheck disable=SC1091
. .venv/bin/activate
step "tht --version (from any directory)" bash -c 'cd / && tht --version'

cd "$WORK"
step "tht init" tht init my-kb --language en
cd my-kb
git init -q -b main
mkdir -p documents
cp "${DOCS[@]}" documents/
cat >> thoth.toml <<'TOML'

[[channels]]
name = "filings"
description = "Quarterly reports (SEC form 10-Q) of listed companies."
examples = ["What was the company's revenue in the quarter?", "What risks does the report disclose?"]

[[sources]]
name = "filings"
include = ["documents/*.pdf"]
channel = "filings"
labels = ["public"]
TOML
cat > answers/channels.yaml <<'YAML'
- {question: "How much cash did the company hold at the end of the quarter?", channel: filings}
- {question: "What were the operating expenses in the three months?", channel: filings}
- {question: "Which legal proceedings are pending against the company?", channel: filings}
- {question: "What is the recipe for a margherita pizza?", channel: null}
- {question: "Who won the football world cup in 2006?", channel: null}
- {question: "How do I renew my passport?", channel: null}
YAML
git add -A
git -c user.name=newcomer -c user.email=n@example.invalid commit -q -m "knowledge"
step "tht verify" tht verify
step "tht docs sync --dry-run" tht docs sync --dry-run
step "tht docs sync" tht docs sync
step "tht channels calibrate" tht channels calibrate
# What the README says next: set the suggested floor and threshold in thoth.toml, commit.
tht channels calibrate --json | python -c '
import json, sys, tomlkit
data = json.load(sys.stdin)
doc = tomlkit.parse(open("thoth.toml").read())
doc["answers"]["min_similarity"] = round(data["relevance"]["threshold"], 2)
doc["answers"].setdefault("routing", tomlkit.table())["channel_threshold"] = round(data["threshold"], 2)
open("thoth.toml", "w").write(tomlkit.dumps(doc))
print("set min_similarity and channel_threshold:", doc["answers"]["min_similarity"],
      doc["answers"]["routing"]["channel_threshold"])
'
git -c user.name=newcomer -c user.email=n@example.invalid commit -q -am "calibrated floor"
step "tht ask" tht ask "What were total net sales in the quarter?" --label public --show-context

echo
echo "step durations (s), $(nproc) CPUs:"
for i in "${!NAMES[@]}"; do
    printf '  %-36s %8.1f\n' "${NAMES[$i]}" "${SECONDS_TAKEN[$i]}"
done
rm -rf "$WORK"
