#!/usr/bin/env bash
# The whole check: the contract lints (Redocly and Spectral), breaks no client of the last release
# unless CHANGELOG.md announces it, the generated types are fresh, the code type-checks and lints and
# is formatted (ESLint, Prettier), its
# imports follow the layers of docs/development.md (Architecture), the
# suite passes on PGlite and, when TEST_DATABASE_URL is set, on PostgreSQL too (with the reference Bluesky
# PDS of test/pds, installed first when missing or stale), and the SDK's
# tarball installs and type-checks in an empty project (SDK_PACK_CHECK=skip when the caller ran it).
set -euo pipefail
cd "$(dirname "$0")/.."
export REDOCLY_TELEMETRY=off

echo "== lint the contract"; npm run -s lint:spec
echo "== breaking changes since the last release are announced (openapi/released/, CHANGELOG.md)"; npm run -s contract:changes
echo "== generated types are fresh"; npm run -s gen:check
# The type-check, the format check and the imports' layers on one core, the lint (the longest, about a
# minute) on the other: side by side, each printed when all are done.
echo "== type-check; format (Prettier); imports run downhill, without cycles (.dependency-cruiser.mjs); lint (ESLint, type-checked rules), zero findings"
checks=$(mktemp -d)
{
  npx tsc --noEmit &&
    npx prettier --check --log-level warn . &&
    npx depcruise src --config .dependency-cruiser.mjs --output-type err
} >"$checks/types" 2>&1 &
types=$!
npx eslint --max-warnings 0 . >"$checks/lint" 2>&1 &
lint=$!
failed=0
wait "$types" || failed=1
wait "$lint" || failed=1
cat "$checks/types" "$checks/lint"
rm -rf "$checks"
[ "$failed" = 0 ] || { echo "a check above failed"; exit 1; }
echo "== build the server bundles and the API reference (what changed since the last build)"
node --input-type=module -e "(await import('./scripts/build-if-stale.mjs')).buildIfStale()"
echo "== the Bluesky tests' reference PDS (test/pds) is installed for this Node (scripts/test-pds.mjs)"
node scripts/test-pds.mjs
if [ -n "${TEST_DATABASE_URL:-}" ]; then
  echo "== tests on PGlite and on PostgreSQL ($TEST_DATABASE_URL), one run (vitest.config.ts, test/one-database.txt)"
else
  echo "== tests on PGlite; PostgreSQL skipped: set TEST_DATABASE_URL (e.g. postgresql://postgres@127.0.0.1:5432/test) to run them too"
fi
npx vitest run "$@"
if [ "${SDK_PACK_CHECK:-run}" != skip ]; then
  echo "== the SDK tarball installs in an empty project and type-checks"; scripts/check-sdk-pack.sh
fi
