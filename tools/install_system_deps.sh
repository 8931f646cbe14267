#!/bin/sh
# Debian packages the fusion report needs: Graphviz lays out the graph
# pictures of the HTML report; Chromium opens that page in the tests.
# Idempotent: installs only what is missing.  Without root or apt it says what
# to install and exits 0 (the report is still written, without pictures).
set -u
need=""
command -v dot >/dev/null 2>&1 || need="$need graphviz"
if [ "${1:-}" = "--with-browser" ]; then
  command -v chromium >/dev/null 2>&1 || need="$need chromium"
fi
[ -z "$need" ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "warning: please install the Debian packages:$need (apt-get install$need)" >&2
  exit 0
fi
echo "installing Debian packages:$need" >&2
apt-get update -qq >/dev/null &&
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need >/dev/null ||
  echo "warning: apt-get install$need failed" >&2
exit 0
