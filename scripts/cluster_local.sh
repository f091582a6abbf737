#!/usr/bin/env bash
# The distributed mode on one machine, to watch it work:
#   a Ray head (no CPUs) + two 1-CPU Ray workers, PostgreSQL, two app replicas, HAProxy in front.
#
#   bash scripts/cluster_local.sh start     # then open http://127.0.0.1:8500 from inside (see below)
#   bash scripts/cluster_local.sh status
#   bash scripts/cluster_local.sh exec CMD  # CMD inside the cluster's network namespace
#   bash scripts/cluster_local.sh stop
#
# Everything listens on 127.0.0.1 only. Ray binds and dials the machine's own address whatever
# --node-ip-address says, so `start` runs inside a network namespace of its own whose only
# interface is lo (scripts/isolated.sh; as root), and refuses to start Ray outside one. The
# daemons keep that namespace alive; `status` and `exec` enter it (nsenter), `stop` ends them.
# On a department's machines (Ray on their private network, a real Postgres, the replicas and
# HAProxy on their own hosts) set CLUSTER_REAL_NETWORK=1 and CLUSTER_HOST to this machine's
# private address, or follow deploy/README.md host by host.
#
# Settings (environment), with their defaults:
#   CLUSTER_STATE=.cache/cluster   state folder (git-ignored): state.env (pids, ports; mode 600), logs/
#   CLUSTER_HOST=127.0.0.1         the address everything binds and dials
#   CLUSTER_PROXY_PORT=8500        HAProxy, where students connect
#   CLUSTER_REPLICA_PORTS="8501 8502"  one app replica a port ("none": no replicas and no HAProxy)
#   CLUSTER_RAY_PORT=6379          the Ray head's GCS (RAY_ADDRESS=HOST:PORT)
#   CLUSTER_PG_PORT=5433           PostgreSQL (database bert_explorer, user postgres, a random password)
#   CLUSTER_BACKEND=ray            the replicas' BERT_EXPLORER_BACKEND (local: no Ray jobs, the rest the same)
#   CLUSTER_WORKER_GPUS="0 0"      fake GPUs of each worker (e.g. "0 1": the second takes num_gpus=1 jobs)
#   BERT_EXPLORER_BOARD=1          the class board (on the PostgreSQL above) is on
#   BERT_EXPLORER_TEACHER_KEY=     one teacher key for every replica (default: a random one, in state.env)
#   BERT_EXPLORER_CACHE=.cache/    the run store every replica and worker shares (one machine: one folder)
#   PYTHON=.venv/bin/python
# The replicas get BERT_EXPLORER_BACKEND, RAY_ADDRESS, RAY_AUTH_MODE=token + RAY_AUTH_TOKEN,
# BERT_EXPLORER_DATABASE_URL, BERT_EXPLORER_CACHE, BERT_EXPLORER_BOARD, BERT_EXPLORER_TEACHER_KEY
# and one STREAMLIT_SERVER_COOKIE_SECRET.
set -Eeuo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
STATE="${CLUSTER_STATE:-.cache/cluster}"
mkdir -p "$STATE"
STATE="$(cd "$STATE" && pwd)"
STATE_FILE="$STATE/state.env"
LOGS="$STATE/logs"
HOST="${CLUSTER_HOST:-127.0.0.1}"
PROXY_PORT="${CLUSTER_PROXY_PORT:-8500}"
REPLICA_PORTS="${CLUSTER_REPLICA_PORTS:-8501 8502}"
RAY_PORT="${CLUSTER_RAY_PORT:-6379}"
PG_PORT="${CLUSTER_PG_PORT:-5433}"
BACKEND="${CLUSTER_BACKEND:-ray}"
WORKER_GPUS="${CLUSTER_WORKER_GPUS:-0 0}"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PYTHON" ] || PYTHON="$(command -v python3)"
RAY="$(dirname "$PYTHON")/ray"
PG_RUN_AS=nobody # PostgreSQL refuses root
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" RAY_USAGE_STATS_ENABLED=0

say() { echo "cluster_local: $*" >&2; }
# A command in a session of its own (stopping its group stops all it started) at this script's
# niceness: Linux gives a new session's scheduling group (autogroup) niceness 0 whatever its
# processes' (benchmarks.server.own_session is the same for Python callers). Only as a background
# job (`own_session cmd &`): it execs, so $! is the command's process and its group's id.
own_session() {
  # shellcheck disable=SC2016 # expanded by the inner bash
  exec setsid bash -c 'echo "$(nice)" >/proc/self/autogroup 2>/dev/null; exec "$@"' own_session "$@"
}
die() {
  say "$*"
  exit 1
}

only_loopback() { [ "$(awk 'NR > 2 {sub(":", "", $1); print $1}' /proc/net/dev | tr '\n' ' ')" = "lo " ]; }

pg_program() {
  command -v "$1" 2>/dev/null && return
  local found
  found="$(ls -d /usr/lib/postgresql/*/bin/"$1" 2>/dev/null | sort -V | tail -1)"
  [ -n "$found" ] && echo "$found"
}

as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u "$PG_RUN_AS" -- "$@"; else "$@"; fi; }

# every process of these process groups and what they started (Ray's workers start sessions of
# their own but stay the raylet's children)
group_tree() {
  ps -eo pid=,ppid=,pgid= | awk -v groups=" $* " '
    { pid[NR] = $1; ppid[NR] = $2; if (index(groups, " " $3 " ")) keep[$1] = 1 }
    END {
      do { grew = 0; for (i in pid) if (!(pid[i] in keep) && (ppid[i] in keep)) { keep[pid[i]] = 1; grew = 1 } } while (grew)
      for (p in keep) print p
    }'
}

# SIGTERM, up to $1 s, then SIGKILL, for the given pids
end_pids() {
  local grace="$1"
  shift
  [ "$#" = 0 ] && return 0
  kill -TERM "$@" 2>/dev/null || true
  local left=("$@") i
  for ((i = 0; i < grace * 10; i++)); do
    left=()
    for p in "$@"; do kill -0 "$p" 2>/dev/null && left+=("$p"); done
    [ "${#left[@]}" = 0 ] && return 0
    sleep 0.1
  done
  kill -KILL "${left[@]}" 2>/dev/null || true
}

wait_health() { # url timeout_s pid-or-empty
  local url="$1" end=$((SECONDS + $2)) pid="${3:-}"
  while [ "$SECONDS" -lt "$end" ]; do
    [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null && return 1
    [ "$(curl -s --max-time 2 "$url/_stcore/health" 2>/dev/null)" = ok ] && return 0
    sleep 0.3
  done
  return 1
}

record() { echo "$1=$2" >>"$STATE_FILE"; }

load_state() {
  [ -f "$STATE_FILE" ] || return 1
  # shellcheck disable=SC1090
  source "$STATE_FILE"
}

# a process of the cluster that is alive: its network namespace is the cluster's
namespace_pid() {
  local p
  for p in ${HAPROXY_PID:-} ${REPLICA_PIDS:-} ${RAY_PGIDS:-}; do
    for q in $p $(group_tree "$p"); do
      [ -e "/proc/$q/ns/net" ] && kill -0 "$q" 2>/dev/null && echo "$q" && return 0
    done
  done
  return 1
}

in_namespace() { # CMD... inside the cluster's namespace (here if it is this one)
  local p
  p="$(namespace_pid)" || die "no process of the cluster is running"
  if [ "$(readlink "/proc/$p/ns/net")" = "$(readlink /proc/self/ns/net)" ]; then
    "$@"
  else
    nsenter --target "$p" --net -- "$@"
  fi
}

start() {
  if [ -f "$STATE_FILE" ]; then
    die "a cluster is already recorded in $STATE_FILE: scripts/cluster_local.sh stop first"
  fi
  if ! only_loopback && [ "${CLUSTER_REAL_NETWORK:-0}" != 1 ]; then
    [ "${CLUSTER_ISOLATED:-0}" = 1 ] && die "scripts/isolated.sh gave no namespace of only lo (as root?): Ray is not started outside one"
    say "entering a network namespace of its own (scripts/isolated.sh)"
    CLUSTER_ISOLATED=1 exec bash "$ROOT/scripts/isolated.sh" bash "$ROOT/scripts/cluster_local.sh" start
  fi
  command -v haproxy >/dev/null || die "HAProxy is missing: make setup-cluster"
  [ -x "$RAY" ] || die "Ray is missing ($RAY): make setup-cluster"
  local initdb pg_ctl
  initdb="$(pg_program initdb)" || die "PostgreSQL's initdb is missing"
  pg_ctl="$(pg_program pg_ctl)" || die "PostgreSQL's pg_ctl is missing"

  mkdir -p "$LOGS"
  umask 077
  : >"$STATE_FILE"
  umask 022
  trap 'say "start failed: stopping what started (logs in $LOGS)"; stop_all; exit 1' ERR
  local run token secret pg_password teacher_key
  run="$(mktemp -d /tmp/bert-cluster.XXXXXX)" # short: Ray's and Postgres's unix sockets live under it
  chmod 755 "$run"
  token="$("$PYTHON" -c 'import secrets; print(secrets.token_hex(32))')"
  secret="$("$PYTHON" -c 'import secrets; print(secrets.token_hex(32))')"
  pg_password="$("$PYTHON" -c 'import secrets; print(secrets.token_urlsafe(16))')"
  teacher_key="${BERT_EXPLORER_TEACHER_KEY:-$("$PYTHON" -c 'import secrets; print(secrets.token_urlsafe(12))')}"
  record RUN_DIR "$run"
  record RAY_AUTH_TOKEN "$token"
  record TEACHER_KEY "$teacher_key"
  export RAY_AUTH_MODE=token RAY_AUTH_TOKEN="$token" RAY_TMPDIR="$run"
  # a cluster setting the replicas (Ray drivers) take from the head: they outlive a lost head
  # instead of ending 60 s after it (the training pages then say the cluster cannot be reached)
  export RAY_gcs_rpc_server_reconnect_timeout_s=86400
  local t0=$SECONDS

  # --- Ray: the head, then the workers one after the other (two at once in one session folder
  # crash a raylet); each `ray start` in a session of its own: its daemons stay in its group
  local pgids="" gpus i=0
  own_session "$RAY" start --head --node-ip-address "$HOST" --port "$RAY_PORT" --num-cpus 0 --include-dashboard false \
    --temp-dir "$run/ray" --disable-usage-stats >"$LOGS/ray-head.log" 2>&1 &
  pgids="$!"
  record RAY_PGIDS "\"$pgids\""
  wait "$!" || { tail -20 "$LOGS/ray-head.log" >&2; false; }
  for gpus in $WORKER_GPUS; do
    i=$((i + 1))
    own_session "$RAY" start --address "$HOST:$RAY_PORT" --node-ip-address "$HOST" --num-cpus 1 --num-gpus "$gpus" \
      --disable-usage-stats >"$LOGS/ray-worker$i.log" 2>&1 &
    pgids="$pgids $!"
    sed -i "s/^RAY_PGIDS=.*/RAY_PGIDS=\"$pgids\"/" "$STATE_FILE"
    wait "$!" || { tail -20 "$LOGS/ray-worker$i.log" >&2; false; }
  done
  record RAY_ADDRESS "$HOST:$RAY_PORT"
  say "Ray: head + $i workers on $HOST:$RAY_PORT ($((SECONDS - t0)) s)"

  # --- PostgreSQL, as an unprivileged user when we are root
  local pg="$run/pg"
  mkdir -p "$pg"
  [ "$(id -u)" = 0 ] && chown "$PG_RUN_AS" "$pg"
  echo "$pg_password" >"$pg/pwfile"
  [ "$(id -u)" = 0 ] && chown "$PG_RUN_AS" "$pg/pwfile"
  as_pg "$initdb" -D "$pg/data" -U postgres --auth=scram-sha-256 --pwfile="$pg/pwfile" -E UTF8 --locale=C \
    --no-instructions >"$LOGS/initdb.log" 2>&1 || { tail -20 "$LOGS/initdb.log" >&2; false; }
  rm -f "$pg/pwfile"
  cat >>"$pg/data/postgresql.conf" <<EOF
listen_addresses = '$HOST'
port = $PG_PORT
unix_socket_directories = '$pg'
EOF
  record PG_DATA "$pg/data"
  as_pg "$pg_ctl" -D "$pg/data" -l "$pg/server.log" -w -t 60 start >/dev/null ||
    { tail -20 "$pg/server.log" >&2; false; }
  record PG_CTL "$pg_ctl"
  local db_url="postgresql://postgres:$pg_password@$HOST:$PG_PORT/bert_explorer"
  "$PYTHON" - "postgresql://postgres:$pg_password@$HOST:$PG_PORT/postgres" <<'EOF'
import sys
import psycopg

with psycopg.connect(sys.argv[1], autocommit=True) as conn:
    conn.execute("CREATE DATABASE bert_explorer")
EOF
  record DATABASE_URL "$db_url"
  say "PostgreSQL on $HOST:$PG_PORT"
  if [ "$REPLICA_PORTS" = none ]; then # a driver of its own (a bench) is the app
    trap - ERR
    say "up in $((SECONDS - t0)) s: Ray and PostgreSQL, no replicas (state in $STATE_FILE)"
    return 0
  fi

  # --- the app replicas
  local replica_pids="" port n=0 pid
  for port in $REPLICA_PORTS; do
    n=$((n + 1))
    BERT_EXPLORER_BACKEND="$BACKEND" RAY_ADDRESS="$HOST:$RAY_PORT" BERT_EXPLORER_DATABASE_URL="$db_url" \
      BERT_EXPLORER_CACHE="${BERT_EXPLORER_CACHE:-.cache/}" STREAMLIT_SERVER_COOKIE_SECRET="$secret" \
      BERT_EXPLORER_BOARD="${BERT_EXPLORER_BOARD:-1}" BERT_EXPLORER_TEACHER_KEY="$teacher_key" \
      own_session "$PYTHON" -m streamlit run streamlit_app.py --server.address "$HOST" --server.port "$port" \
      --server.headless true --browser.gatherUsageStats false >"$LOGS/replica$n.log" 2>&1 &
    replica_pids="$replica_pids $!"
  done
  record REPLICA_PIDS "\"${replica_pids# }\""
  record REPLICA_PORTS "\"$REPLICA_PORTS\""
  set -- $replica_pids
  for port in $REPLICA_PORTS; do
    pid="$1"
    shift
    wait_health "http://$HOST:$port" 180 "$pid" ||
      { say "replica on $port did not answer /_stcore/health"; tail -20 "$LOGS"/replica*.log >&2; false; }
  done
  say "replicas ($BACKEND backend) on $HOST: $REPLICA_PORTS"

  # --- HAProxy in front, once the replicas answer (it counts a server up until checks fail)
  local replicas=()
  for port in $REPLICA_PORTS; do replicas+=(--replica "$HOST:$port"); done
  "$PYTHON" scripts/proxy_config.py --listen "$HOST:$PROXY_PORT" "${replicas[@]}" >"$STATE/haproxy.cfg"
  haproxy -D -p "$run/haproxy.pid" -f "$STATE/haproxy.cfg" >"$LOGS/haproxy.log" 2>&1
  record HAPROXY_PID "$(cat "$run/haproxy.pid")"
  record PROXY_URL "http://$HOST:$PROXY_PORT"
  wait_health "http://$HOST:$PROXY_PORT" 30 || { say "HAProxy does not answer"; false; }
  trap - ERR
  say "up in $((SECONDS - t0)) s: students connect to http://$HOST:$PROXY_PORT (state in $STATE_FILE; the teacher key is its TEACHER_KEY)"
}

stop_all() {
  load_state || return 0
  # the replicas (each its own session), HAProxy, the Ray workers then the head, PostgreSQL
  local p pids=()
  for p in ${REPLICA_PIDS:-}; do pids+=($(group_tree "$p")); done
  end_pids 15 "${pids[@]}"
  [ -n "${HAPROXY_PID:-}" ] && end_pids 5 "$HAPROXY_PID"
  local groups=(${RAY_PGIDS:-}) i
  for ((i = ${#groups[@]} - 1; i >= 0; i--)); do
    # the head's GCS and monitor outlive a SIGTERM by 15 s and more; nothing there to keep
    end_pids 2 $(group_tree "${groups[$i]}")
  done
  if [ -n "${PG_DATA:-}" ] && [ -f "$PG_DATA/postmaster.pid" ]; then
    as_pg "${PG_CTL:-pg_ctl}" -D "$PG_DATA" -m fast -w -t 30 stop >/dev/null || true
  fi
  [ -n "${RUN_DIR:-}" ] && [ -d "$RUN_DIR" ] && rm -rf "$RUN_DIR"
  rm -f "$STATE_FILE"
}

status() {
  load_state || {
    echo "no cluster recorded in $STATE_FILE"
    return 3
  }
  local bad=0 p g alive
  for g in ${RAY_PGIDS:-}; do
    alive="$(group_tree "$g" | wc -l)"
    echo "ray node (group $g): $alive processes"
    [ "$alive" -gt 0 ] || bad=1
  done
  if [ -n "${PG_DATA:-}" ] && as_pg "${PG_CTL:-pg_ctl}" -D "$PG_DATA" status >/dev/null 2>&1; then
    echo "postgresql: running ($PG_DATA)"
  else
    echo "postgresql: not running"
    bad=1
  fi
  set -- ${REPLICA_PORTS:-}
  for p in ${REPLICA_PIDS:-}; do
    if [ "$(in_namespace curl -s --max-time 3 "http://$HOST:$1/_stcore/health" 2>/dev/null)" = ok ]; then
      echo "replica $HOST:$1 (pid $p): ok"
    else
      echo "replica $HOST:$1 (pid $p): not answering"
      bad=1
    fi
    shift
  done
  if [ "$(in_namespace curl -s --max-time 3 "${PROXY_URL:-}/_stcore/health" 2>/dev/null)" = ok ]; then
    echo "haproxy ${PROXY_URL:-} (pid ${HAPROXY_PID:-}): ok"
  else
    echo "haproxy ${PROXY_URL:-}: not answering"
    bad=1
  fi
  return "$bad"
}

case "${1:-}" in
start) start ;;
stop) stop_all ;;
status) status ;;
exec)
  shift
  load_state || die "no cluster recorded in $STATE_FILE"
  export RAY_ADDRESS RAY_AUTH_MODE=token RAY_AUTH_TOKEN BERT_EXPLORER_DATABASE_URL="$DATABASE_URL" CLUSTER_PROXY_URL="${PROXY_URL:-}" \
    CLUSTER_TEACHER_KEY="${TEACHER_KEY:-}" CLUSTER_REPLICA_PIDS="${REPLICA_PIDS:-}"
  in_namespace "$@"
  ;;
*)
  echo "usage: bash scripts/cluster_local.sh start|stop|status|exec CMD..." >&2
  exit 2
  ;;
esac
