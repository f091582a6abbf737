#!/usr/bin/env bash
# axe-core (npm, pinned) for the accessibility audit in tests/browser/test_accessibility_browser.py:
# installed into .node/ (git-ignored), read by the test and injected into each page. Without npm or
# the registry the audit skips (CI fails it).
set -u
AXE_VERSION=4.14.1
DEST=.node
if [ -f "$DEST/node_modules/axe-core/package.json" ] \
  && grep -q "\"version\": \"$AXE_VERSION\"" "$DEST/node_modules/axe-core/package.json"; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null) \
      || echo "npm could not be installed: the accessibility audit will skip (CI fails it)."
  fi
fi
if command -v npm >/dev/null 2>&1; then
  mkdir -p "$DEST"
  npm install --prefix "$DEST" --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
    "axe-core@$AXE_VERSION" >/dev/null \
    || echo "axe-core could not be installed: the accessibility audit will skip (CI fails it)."
else
  echo "npm is missing: the accessibility audit will skip (CI fails it)."
fi
exit 0
