#!/bin/sh
# A virtual environment with the Python SDK (python/) and its test dependencies; prints the path
# of its python as the last line on stdout (everything else goes to stderr):
#
#   PY=$(sh scripts/python-env.sh | tail -n 1) && "$PY" -m pytest python/tests
#
# The environment is made once per python/pyproject.toml (its sha256 names the folder), under
# ${XDG_CACHE_HOME:-$HOME/.cache}/voyage-connect/, and reused after; a call after a change of the
# package's files re-installs the package itself (no dependencies, no build isolation: a second
# or two), so source changes count.
# Python: $PYTHON, else python3 (3.11 or later).
set -eu

root=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd)
project="$root/python"
python=${PYTHON:-python3}

if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "python-env: the SDK needs Python 3.11 or later; $python is $("$python" --version 2>&1 | head -n 1). Set PYTHON to another." >&2
  exit 1
fi

# The interpreter's hashlib: sha256sum and shasum are not on every system.
hash=$("$python" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest()[:12])' "$project/pyproject.toml")
cache="${XDG_CACHE_HOME:-$HOME/.cache}/voyage-connect"
venv="$cache/python-$hash"
# --retries 0: an index that cannot be reached (no DNS) fails at once instead of after minutes,
# and pip goes on with the other configured indexes.
pip_options="--retries 0 --timeout 15 --disable-pip-version-check --no-input"
# The same for any pip that pip itself starts.
PIP_RETRIES=0 PIP_TIMEOUT=15
export PIP_RETRIES PIP_TIMEOUT

mkdir -p "$cache"
# One writer at a time: two test runs starting together must not build the same environment.
# The lock is a directory holding its owner's pid; a lock whose owner is gone (killed) is taken over.
lock="$venv.lock"
waited=0
until mkdir "$lock" 2>/dev/null; do
  owner=$(cat "$lock/pid" 2>/dev/null || true)
  if [ -n "$owner" ] && ! kill -0 "$owner" 2>/dev/null; then
    rm -rf "$lock"
    continue
  fi
  if [ "$waited" -ge 600 ]; then
    echo "python-env: $lock has been held for 10 minutes (by pid ${owner:-?}); remove it if no run is using it" >&2
    exit 1
  fi
  sleep 1
  waited=$((waited + 1))
done
echo $$ > "$lock/pid"
trap 'rm -rf "$lock"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# What the package's files are now: it is installed again only when they changed since the last
# install, so a run that finds it current touches nothing a test already running may be using.
source_hash=$("$python" -c '
import hashlib, pathlib, sys
root = pathlib.Path(sys.argv[1])
digest = hashlib.sha256()
for path in sorted([root / "pyproject.toml", root / "README.md", *(root / "voyage_connect").rglob("*")]):
    if path.is_file() and "__pycache__" not in path.parts:
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
print(digest.hexdigest())' "$project")

if [ ! -f "$venv/.complete" ]; then
  # A half-made environment (an interrupted first run) is made again from nothing.
  rm -rf "$venv"
  echo "python-env: creating $venv" >&2
  "$python" -m venv "$venv" >&2
  # The build backend goes in first, beside the package, so that no install builds in an isolated
  # environment: pip's build environments do not inherit --retries and would wait on an
  # unreachable index for most of a minute.
  # shellcheck disable=SC2086
  "$venv/bin/python" -m pip install $pip_options "hatchling>=1.18" >&2
  # shellcheck disable=SC2086
  "$venv/bin/python" -m pip install $pip_options --no-build-isolation "$project[test]" >&2
  echo "$source_hash" > "$venv/.source-hash"
  touch "$venv/.complete"
fi

if [ "$(cat "$venv/.source-hash" 2>/dev/null || true)" != "$source_hash" ]; then
  # shellcheck disable=SC2086
  "$venv/bin/python" -m pip install $pip_options --quiet --no-deps --force-reinstall --no-build-isolation "$project" >&2
  echo "$source_hash" > "$venv/.source-hash"
fi

echo "$venv/bin/python"
