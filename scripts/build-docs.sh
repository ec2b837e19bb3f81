#!/usr/bin/env bash
# Builds the API reference served at /docs and /docs/oauth: one self-contained Redoc page per API
# (`--inlineBundle`, so no script comes from a CDN). Redoc's "API docs by" badge still points its
# logo at Redocly's CDN; the server's policy for these pages lets no third party see who reads a
# self-hosted installation's docs, so that image was blocked (a broken image and a console error on
# every page). It becomes an inline SVG of the same word instead.
set -euo pipefail
cd "$(dirname "$0")/.."
export REDOCLY_TELEMETRY=off

logo="data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='58' height='16'%3E%3Ctext x='0' y='12' font-family='sans-serif' font-size='12' fill='%2357606a'%3ERedocly%3C/text%3E%3C/svg%3E"
for api in public-v1 oauth; do
  page="dist/docs/$api.html"
  npx redocly build-docs "$api" --inlineBundle --output "$page"
  LOGO="$logo" perl -pi -e 's{https://cdn\.redoc\.ly/redoc/logo-mini(?:-full)?\.svg}{$ENV{LOGO}}g' "$page"
  if grep -q 'cdn\.redoc\.ly' "$page"; then
    echo "$page still refers to cdn.redoc.ly; scripts/build-docs.sh needs to follow Redoc's change" >&2
    exit 1
  fi
done
