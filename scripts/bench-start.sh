#!/usr/bin/env bash
# How long `npm start` takes until /readyz answers 200: 5 starts on the embedded database (PGlite)
# and 5 on PostgreSQL, each after the previous one has fully stopped; prints the median and the
# worst of each, and the first start on an empty data directory (which creates the database) apart.
# Then 5 crashes on PGlite: a running server killed with SIGKILL (npm, its shell and node, the
# process group) and `npm start` run again at once, timed from that start.
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

# Runs `npm start` in a process group of its own (its id in server_pid, the group's) and waits until
# /readyz answers 200.
start_ready() {
  setsid npm start >"$work/server.log" 2>&1 &
  server_pid=$!
  until curl -sf --max-time 1 "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1; do
    if ! kill -0 "$server_pid" 2>/dev/null; then cat "$work/server.log" >&2; echo "the server exited" >&2; exit 1; fi
    sleep 0.02
  done
}

# One crash: milliseconds from the `npm start` run right after the server was killed with SIGKILL
# until /readyz answers 200 (the killed server's lock on the embedded database is taken over).
restart_after_kill() {
  local began ready
  start_ready
  kill -KILL -- "-$server_pid"
  wait "$server_pid" 2>/dev/null || true   # collects npm without the shell's "Killed" notice
  began=$(now_ms)
  start_ready
  ready=$(now_ms)
  kill -TERM -- "-$server_pid"
  while kill -0 "$server_pid" 2>/dev/null; do sleep 0.05; done
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
printf '%-12s ' 'after kill -9'
for _ in $(seq "$RUNS"); do restart_after_kill; done | summarize

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
