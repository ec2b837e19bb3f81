#!/usr/bin/env bash
# Builds @service/sdk into src/sdk/dist. The package must carry the contract's types itself, so the
# build compiles a copy of src/sdk/src in which src/spec.ts (a re-export of generated/public-v1.ts)
# is replaced by the generated file: the published files import nothing from outside the package.
set -euo pipefail
cd "$(dirname "$0")/.."

sdk=src/sdk
rm -rf "$sdk/dist" "$sdk/build"
mkdir -p "$sdk/build"
trap 'rm -rf "$sdk/build"' EXIT
cp "$sdk"/src/*.ts "$sdk/build/"
cp generated/public-v1.ts "$sdk/build/spec.ts"
npx tsc -p "$sdk/tsconfig.build.json"
echo "built $sdk/dist"
