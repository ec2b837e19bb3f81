#!/usr/bin/env bash
# The MCP Inspector (its command line, `mcp-inspector --cli`), which test/mcp-inspector.test.ts runs against
# the server's /mcp. Not one of the project's packages: it brings a web client, a terminal UI and a bundler
# (about 110 MB) and a postinstall script that sets up its clients, none of which the command line needs.
# Installed from the npm registry into .cache/mcp-inspector with every install script off; .ci/run runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
version=2.12.0
dir=.cache/mcp-inspector
if [ -x "$dir/node_modules/.bin/mcp-inspector" ] && grep -q "\"version\": \"$version\"" "$dir/node_modules/@modelcontextprotocol/inspector/package.json"; then
  exit 0
fi
mkdir -p "$dir"
[ -f "$dir/package.json" ] || echo '{ "private": true }' >"$dir/package.json"
npm install --prefix "$dir" --ignore-scripts --no-audit --no-fund --save-exact "@modelcontextprotocol/inspector@$version" >/dev/null
