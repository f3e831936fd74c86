#!/bin/sh
# The login page is tested in a real browser: Debian's Chromium, driven by playwright-core (which
# downloads nothing). Installs it when missing and this user may; otherwise says what to do.
set -e
[ -n "${CHROMIUM_PATH:-}" ] && [ -x "$CHROMIUM_PATH" ] && exit 0
command -v chromium >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's chromium for the browser tests" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  exit 0
fi
echo "The browser tests need Chromium: install it (apt-get install chromium) or set CHROMIUM_PATH." >&2
exit 1
