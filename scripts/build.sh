#!/usr/bin/env bash
# Builds what `npm start` runs, so that starting builds nothing: the server compiled to JavaScript
# (dist/server), the API reference (dist/docs) and the embedded database's template (dist/embedded-database.tar). `npm install` runs it (the `prepare` script), and
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
if [ "$part" = all ] || [ "$part" = database ]; then
  # The embedded database's migrated template, which a new data directory starts from (a first start
  # then runs no initdb): src/db/embedded-template.ts. Run from the server's bundle, as npm start runs.
  node --no-wasm-dynamic-tiering --no-wasm-tier-up dist/server/embedded-template.mjs
fi
