#!/bin/sh
# Installs the system packages PhysLab uses, where it can:
#   bubblewrap - the sandbox's isolation (without it PhysLab falls back to a weaker rlimit-only
#                sandbox and says so);
#   chromium   - only for the dashboard's browser tests (set PHYSLAB_SKIP_CHROMIUM=1 to skip).
# As root it uses apt-get; otherwise it prints what is missing and carries on.
set -u
missing=""
command -v bwrap >/dev/null 2>&1 || missing="$missing bubblewrap"
if [ "${PHYSLAB_SKIP_CHROMIUM:-0}" != "1" ] && [ "${1:-}" = "--with-browser" ]; then
  command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || missing="$missing chromium"
fi
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "bootstrap: installing$missing with apt-get" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 || true
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null 2>&1 \
    || echo "bootstrap: apt-get could not install$missing; continuing without" >&2
else
  echo "bootstrap: missing$missing (install them with your package manager; without bubblewrap" \
       "the sandbox uses a weaker rlimit-only fallback and says so)" >&2
fi
exit 0
