#!/usr/bin/env bash
# Regenerates docs/baselines/<game>.{md,json}: random vs heuristic vs ismcts:100 per game (kahve league).
# Single deals (episode=deal) keep the search player affordable; Pishe Pasha's match is one deal anyway.
set -euo pipefail
cd "$(dirname "$0")/.."
league() { game=$1; shift; kahve league "$game" random heuristic ismcts:100 --games 60 --workers "${WORKERS:-2}" \
             --seed 1 --json "docs/baselines/$game.json" --markdown "docs/baselines/$game.md" "$@"; }
league pishti --settings players=2 episode=deal
league pasur --settings episode=deal
league pis_yedili --settings players=2 episode=deal
league pishe_pasha
league ish --settings players=2 max_rounds=20 false_call_fine=1
