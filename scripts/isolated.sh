#!/usr/bin/env bash
# Runs its arguments inside a network namespace of their own whose only interface is loopback
# (`unshare --net`, then `ip link set lo up`): there Ray, PostgreSQL, the app replicas, HAProxy
# and the browser can reach 127.0.0.1 and nothing else. Needs root (CI runs as root); without
# it, or where unshare is refused (a container without CAP_SYS_ADMIN), the arguments run as they
# are, said on stderr, and the tests that need the namespace (tests/ray_cluster.py) skip.
#   bash scripts/isolated.sh .venv/bin/python -m pytest -q
set -euo pipefail
if [ "$#" = 0 ]; then
  echo "usage: bash scripts/isolated.sh COMMAND [ARGS...]" >&2
  exit 2
fi
# already in such a namespace (/proc/net/dev is this process's namespace; /sys/class/net is not)
if [ "$(awk 'NR > 2 {sub(":", "", $1); print $1}' /proc/net/dev | tr '\n' ' ')" = "lo " ]; then
  exec "$@"
fi
if [ "$(id -u)" = 0 ] && unshare --net true 2>/dev/null; then
  exec unshare --net bash -c 'ip link set lo up && exec "$@"' isolated "$@"
fi
echo "scripts/isolated.sh: not root or unshare --net refused: running without a network namespace of its own (the Ray cluster tests will skip)" >&2
exec "$@"
