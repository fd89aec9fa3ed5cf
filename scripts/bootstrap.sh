#!/bin/sh
# Installs the system packages PhysLab uses, where it can:
#   bubblewrap - the sandbox's isolation (without it PhysLab falls back to a weaker rlimit-only
#                sandbox and says so);
#   chromium   - with --with-browser, only for the dashboard's browser tests (set
#                PHYSLAB_SKIP_CHROMIUM=1 to skip);
#   form maxima maxima-share cadabra2 - with --with-cas, the computer algebra systems the sandbox
#                runs besides Python (about 140 MB installed, 31 MB to download, without their
#                recommended packages; see docs/tools.md).
# As root it uses apt-get; otherwise it prints what is missing and carries on.
set -u
browser=0
cas=0
for arg in "$@"; do
  case "$arg" in
    --with-browser) browser=1 ;;
    --with-cas) cas=1 ;;
    *) echo "bootstrap: unknown option $arg (expected --with-browser, --with-cas)" >&2; exit 2 ;;
  esac
done

installed() {  # a Debian package, or (without dpkg) its command
  if command -v dpkg-query >/dev/null 2>&1; then
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"
  else
    command -v "$2" >/dev/null 2>&1
  fi
}

missing=""
command -v bwrap >/dev/null 2>&1 || missing="$missing bubblewrap"
if [ "${PHYSLAB_SKIP_CHROMIUM:-0}" != "1" ] && [ "$browser" = "1" ]; then
  command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || missing="$missing chromium"
fi
cas_missing=""
if [ "$cas" = "1" ]; then
  installed form form || cas_missing="$cas_missing form"
  installed maxima maxima || cas_missing="$cas_missing maxima"
  installed maxima-share maxima || cas_missing="$cas_missing maxima-share"  # integrate() needs its files
  installed cadabra2 cadabra2 || cas_missing="$cas_missing cadabra2"
fi
[ -z "$missing$cas_missing" ] && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "bootstrap: installing$missing$cas_missing with apt-get" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 || true
  if [ -n "$missing" ]; then
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null 2>&1 \
      || echo "bootstrap: apt-get could not install$missing; continuing without" >&2
  fi
  if [ -n "$cas_missing" ]; then
    # their recommended packages (gnuplot, wxWidgets, TeX fonts) are for desktops, not the sandbox
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $cas_missing >/dev/null 2>&1 \
      || echo "bootstrap: apt-get could not install$cas_missing; the tools say which system is missing" >&2
  fi
else
  echo "bootstrap: missing$missing$cas_missing (install them with your package manager; without bubblewrap" \
       "the sandbox uses a weaker rlimit-only fallback and says so; a missing algebra system is reported" \
       "by the tools that would use it)" >&2
fi
exit 0
