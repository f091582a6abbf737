#!/usr/bin/env bash
# HAProxy from Debian for the distributed mode's tests and scripts/cluster_local.sh (as root;
# apt-get update once first). Already there: nothing to do.
set -euo pipefail
command -v haproxy >/dev/null && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "HAProxy is missing: install Debian's package as root (apt-get install haproxy)" >&2
  exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null
