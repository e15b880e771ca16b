#!/usr/bin/env bash
# Throwaway PostgreSQL server for tests (Debian's server packages; preinstalled on our CI
# machines, else: apt-get install -y --no-install-recommends postgresql).
#
# usage:
#   eval "$(scripts/pg.sh start)"   # prints: export PGROOT=… DATABASE_URL=…
#   scripts/pg.sh stop [PGROOT]     # PGROOT defaults to $PGROOT; stops the server, removes the dir
#   scripts/pg.sh halt PGROOT       # stops the server (fast: clients are disconnected), keeps the dir
#   scripts/pg.sh resume PGROOT     # starts a halted server again, same port and data (fault tests)
#
# The server listens on 127.0.0.1 only, on a free port, with its unix socket and all data in
# one temp dir. initdb runs as the `postgres` user when we are root (initdb refuses root).
# fsync/synchronous_commit/full_page_writes are off: fast, and fine for throwaway test data.
#
# env:
#   PGBIN   directory with initdb/pg_ctl (default: newest /usr/lib/postgresql/*/bin, else PATH)
#
# Exit codes: 0 ok, 1 failure, 2 PostgreSQL binaries not found.
set -euo pipefail

MARKER=.certmgr-notify-pg

log() { printf '[pg] %s\n' "$*" >&2; }
die() { log "ERROR: $1"; exit "${2:-1}"; }

find_pgbin() {
  if [ -n "${PGBIN:-}" ]; then
    [ -x "$PGBIN/initdb" ] && [ -x "$PGBIN/pg_ctl" ] || die "PGBIN=$PGBIN has no initdb/pg_ctl" 2
    printf '%s\n' "$PGBIN"; return
  fi
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  if [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then printf '%s\n' "$d"; return; fi
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(command -v initdb)"; return
  fi
  die "PostgreSQL server binaries (initdb, pg_ctl) not found in /usr/lib/postgresql/*/bin or PATH.
      Install them:  apt-get install -y --no-install-recommends postgresql
      or point PGBIN at them, or set DATABASE_URL to an existing server." 2
}

# Run a command as the server's OS user: `postgres` when we are root, else ourselves.
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# A port nobody listens on right now (below Linux's ephemeral range, which starts at 32768).
pick_port() {
  local port
  for _ in $(seq 1 50); do
    port=$((15000 + RANDOM % 17000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then printf '%s\n' "$port"; return; fi
  done
  die "no free port found"
}

server_opts() { # root port
  printf '%s' "-p $2 -c listen_addresses=127.0.0.1 -k $1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
}

start() {
  local pgbin root port attempt
  pgbin=$(find_pgbin)
  if [ "$(id -u)" = 0 ] && ! id -u postgres >/dev/null 2>&1; then
    die "running as root but there is no 'postgres' user to run initdb as (install the postgresql package)"
  fi
  root=$(mktemp -d "${TMPDIR:-/tmp}/certmgr-notify-pg.XXXXXX")
  touch "$root/$MARKER"
  chmod 755 "$root"
  if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$root"; fi

  if ! as_pg "$pgbin/initdb" -D "$root/data" -U app --auth=trust -E UTF8 --locale=C.UTF-8 --no-sync \
      >"$root/initdb.log" 2>&1; then
    cat "$root/initdb.log" >&2
    rm -rf "$root"
    die "initdb failed"
  fi

  # The port can be taken between pick_port and bind: retry with another one.
  for attempt in 1 2 3 4 5; do
    port=$(pick_port)
    if as_pg "$pgbin/pg_ctl" -D "$root/data" -l "$root/server.log" -w -t 30 \
        -o "$(server_opts "$root" "$port")" \
        start >/dev/null 2>&1; then
      log "PostgreSQL $("$pgbin/pg_ctl" --version | awk '{print $3}') on 127.0.0.1:$port, data in $root"
      printf '%s\n' "$port" >"$root/port" # for resume: the same port again
      printf 'export PGROOT=%q DATABASE_URL=%q\n' "$root" "postgres://app@127.0.0.1:$port/postgres"
      return
    fi
    log "start on port $port failed (attempt $attempt)"
  done
  tail -n 30 "$root/server.log" >&2 || true
  rm -rf "$root"
  die "could not start PostgreSQL"
}

stop() {
  local root=${1:-${PGROOT:-}} pgbin
  [ -n "$root" ] || die "usage: $0 stop [PGROOT]  (or set PGROOT)"
  # Only ever delete a directory this script created.
  [ -f "$root/$MARKER" ] || die "$root was not created by $0 start; not touching it"
  if [ -f "$root/data/postmaster.pid" ]; then
    pgbin=$(find_pgbin)
    as_pg "$pgbin/pg_ctl" -D "$root/data" -m fast -w -t 30 stop >/dev/null 2>&1 ||
      as_pg "$pgbin/pg_ctl" -D "$root/data" -m immediate -w -t 30 stop >/dev/null 2>&1 ||
      log "pg_ctl stop failed; removing the directory anyway"
  fi
  rm -rf "$root"
}

# A server of ours, stopped but kept: its clients see "terminating connection due to administrator command".
halt() {
  local root=${1:-} pgbin
  [ -n "$root" ] && [ -f "$root/$MARKER" ] || die "usage: $0 halt PGROOT (a dir made by $0 start)"
  pgbin=$(find_pgbin)
  as_pg "$pgbin/pg_ctl" -D "$root/data" -m fast -w -t 30 stop >/dev/null 2>&1 || die "pg_ctl stop failed"
}

resume() {
  local root=${1:-} pgbin port
  [ -n "$root" ] && [ -f "$root/$MARKER" ] && [ -f "$root/port" ] || die "usage: $0 resume PGROOT (a dir made by $0 start)"
  pgbin=$(find_pgbin)
  port=$(cat "$root/port")
  as_pg "$pgbin/pg_ctl" -D "$root/data" -l "$root/server.log" -w -t 30 -o "$(server_opts "$root" "$port")" start >/dev/null 2>&1 ||
    { tail -n 30 "$root/server.log" >&2 || true; die "could not start PostgreSQL again on port $port"; }
}

case "${1:-}" in
  start) start ;;
  stop) shift; stop "$@" ;;
  halt) shift; halt "$@" ;;
  resume) shift; resume "$@" ;;
  *) die "usage: $0 start|stop|halt|resume [PGROOT]" ;;
esac
