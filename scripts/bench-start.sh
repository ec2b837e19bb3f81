#!/usr/bin/env bash
# How long `npm start` takes until /readyz answers 200: 5 starts on the embedded database (PGlite)
# and 5 on PostgreSQL, each after the previous one has fully stopped; prints the median and the
# worst of each, and the first start on an empty data directory (which creates the database) apart.
# PostgreSQL: BENCH_DATABASE_URL, or a database of its own on postgresql://postgres@127.0.0.1:5432.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$PATH" LOG_LEVEL=warn

RUNS=5
PORT=${BENCH_PORT:-3917}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

npm run -s build >/dev/null   # what `npm install` leaves behind, so no start builds

now_ms() { date +%s%3N; }

# One start: milliseconds from `npm start` until /readyz answers 200, then a graceful stop.
start_once() {
  local began ready pid
  began=$(now_ms)
  setsid npm start >"$work/server.log" 2>&1 &
  pid=$!
  until curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1; do
    if ! kill -0 "$pid" 2>/dev/null; then cat "$work/server.log" >&2; echo "the server exited" >&2; exit 1; fi
    sleep 0.02
  done
  ready=$(now_ms)
  kill -TERM -- "-$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  echo $((ready - began))
}

# Median and worst of the numbers on standard input.
summarize() { sort -n | awk '{ v[NR] = $1 } END { printf "median %5d ms   worst %5d ms   (%s)\n", v[int((NR + 1) / 2)], v[NR], NR " starts" }'; }

echo "Node $(node --version), $(nproc) cores, $(date -u +%Y-%m-%d)"

export PORT DATA_DIR="$work/data"
first=$(start_once)
printf '%-12s first start on an empty data directory: %d ms\n' PGlite "$first"
printf '%-12s ' PGlite
for _ in $(seq "$RUNS"); do start_once; done | summarize

database_url=${BENCH_DATABASE_URL:-}
if [ -z "$database_url" ]; then
  name="bench_start_$$"
  node -e "const pg=require('pg');const c=new pg.Client('postgresql://postgres@127.0.0.1:5432/postgres');c.connect().then(()=>c.query('create database $name')).then(()=>c.end())"
  trap 'node -e "const pg=require(\"pg\");const c=new pg.Client(\"postgresql://postgres@127.0.0.1:5432/postgres\");c.connect().then(()=>c.query(\"drop database if exists $name with (force)\")).then(()=>c.end())"; rm -rf "$work"' EXIT
  database_url="postgresql://postgres@127.0.0.1:5432/$name"
fi
export DATABASE_URL="$database_url"
start_once >/dev/null   # migrates the new database
printf '%-12s ' PostgreSQL
for _ in $(seq "$RUNS"); do start_once; done | summarize
