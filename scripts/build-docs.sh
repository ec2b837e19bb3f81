#!/usr/bin/env bash
# Builds the API reference served at /docs and /docs/oauth: one Redoc page per API, and Redoc's script
# beside them as dist/docs/redoc-<hash>.js. The script is 2.3 MB of the 2.7 MB a page weighed with it
# inlined (`--inlineBundle`); apart, both pages share it and a browser keeps it (the server sends it as
# immutable: a new script has a new name), so a reader fetches it once instead of with every page.
# Without `--inlineBundle` the pages load it from Redocly's CDN; they load it from this server instead,
# so no third party sees who reads a self-hosted installation's docs. For the same reason Redoc's
# "API docs by" badge, whose logo points at Redocly's CDN (which the pages' policy blocks: a broken
# image and a console error on every page), gets an inline SVG of the same word.
set -euo pipefail
cd "$(dirname "$0")/.."
export REDOCLY_TELEMETRY=off

redoc=node_modules/@redocly/cli/lib/chunks/redoc.standalone.js
if [ ! -f "$redoc" ]; then
  echo "Redoc's script is no longer at $redoc; scripts/build-docs.sh needs to follow @redocly/cli's change" >&2
  exit 1
fi
logo="data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='58' height='16'%3E%3Ctext x='0' y='12' font-family='sans-serif' font-size='12' fill='%2357606a'%3ERedocly%3C/text%3E%3C/svg%3E"
redoc_cdn='https://cdn\.redocly\.com/redoc/v[^/"]+/bundles/redoc\.standalone\.js'

mkdir -p dist/docs
rm -f dist/docs/redoc-*.js
script=$(mktemp)
trap 'rm -f "$script"' EXIT
LOGO="$logo" perl -pe 's{https://cdn\.redoc\.ly/redoc/logo-mini(?:-full)?\.svg}{$ENV{LOGO}}g' "$redoc" >"$script"
if grep -q 'cdn\.redoc\.ly' "$script"; then
  echo "Redoc's script still refers to cdn.redoc.ly; scripts/build-docs.sh needs to follow Redoc's change" >&2
  exit 1
fi
# The script's name carries its hash; the pages name it with its subresource integrity.
read -r hash integrity < <(node -e '
  const crypto = require("node:crypto");
  const bytes = require("node:fs").readFileSync(process.argv[1]);
  const digest = (algorithm, encoding) => crypto.createHash(algorithm).update(bytes).digest(encoding);
  console.log(digest("sha256", "hex").slice(0, 16), `sha384-${digest("sha384", "base64")}`);
' "$script")
install -m 644 "$script" "dist/docs/redoc-$hash.js"

for api in public-v1 oauth; do
  page="dist/docs/$api.html"
  npx redocly build-docs "$api" --output "$page"
  SCRIPT="/docs/redoc-$hash.js" INTEGRITY="$integrity" CDN="$redoc_cdn" \
    perl -pi -e 's{$ENV{CDN}}{$ENV{SCRIPT}}g; s{integrity="sha384-[^"]*"}{integrity="$ENV{INTEGRITY}"}g' "$page"
  if grep -q 'cdn\.redoc' "$page" || [ "$(grep -o "/docs/redoc-$hash\.js" "$page" | wc -l)" -ne 2 ]; then
    echo "$page does not load Redoc's script from /docs/redoc-$hash.js alone; scripts/build-docs.sh needs to follow Redoc's change" >&2
    exit 1
  fi
done
