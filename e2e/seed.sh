#!/bin/sh
# Seed for Outpost's own E2E environments, run by the e2e_seed job before each new run.
# The runtime journeys create (and clean up) every device they use, so the baseline is empty
# on purpose: this only proves the platform answers before journeys start.
set -eu
url="${OUTPOST_E2E_SEED_URL:-}"
if [ -n "$url" ] && command -v curl >/dev/null 2>&1; then
  curl -fsS --max-time 10 "$url/readyz" >/dev/null || { echo "Outpost at $url is not ready" >&2; exit 1; }
fi
echo "E2E baseline ready"
