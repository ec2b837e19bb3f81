#!/usr/bin/env bash
# Builds what `npm start` runs, so that starting builds nothing: the server compiled to JavaScript
# (dist/server) and the API reference (dist/docs). `npm install` runs it (the `prepare` script), and
# `npm start` runs it again when a source is newer than its build (scripts/build-if-stale.mjs).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$PATH"

part="${1:-all}"
if [ "$part" = all ] || [ "$part" = docs ]; then
  # Redocly reports every page it renders; its output is shown only when the build fails.
  log=$(mktemp)
  if ! scripts/build-docs.sh >"$log" 2>&1; then cat "$log" >&2; rm -f "$log"; exit 1; fi
  rm -f "$log"
fi
if [ "$part" = all ] || [ "$part" = server ]; then
  node scripts/build-server.mjs
fi
