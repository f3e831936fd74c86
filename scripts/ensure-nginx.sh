#!/bin/sh
# The notification stream is tested through a real reverse proxy: Debian's nginx, which each test
# starts as its own foreground child on a free port (test/setup/nginx.ts). Installs it when
# missing and this user may; otherwise says what to do. The package's own nginx on port 80 is
# left as it is: the tests neither use nor stop it.
set -e
[ -n "${NGINX_PATH:-}" ] && [ -x "$NGINX_PATH" ] && exit 0
command -v nginx >/dev/null 2>&1 && exit 0
[ -x /usr/sbin/nginx ] && exit 0 # sbin is not on every user's PATH
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's nginx for the reverse-proxy tests" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=120 nginx >/dev/null
  exit 0
fi
echo "The reverse-proxy tests need nginx: install it (apt-get install nginx) or set NGINX_PATH." >&2
exit 1
