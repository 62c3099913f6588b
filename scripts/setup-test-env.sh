#!/usr/bin/env bash
# Installs the system programs Outpost's test suite drives for real: Chromium (browser tests),
# OpenSSH server (device sshd), Caddy (on-demand TLS), Mosquitto (MQTT), tmux (terminal tests) and
# systemd-analyze (the deploy units are verified), promtool (the metrics scrape is linted), qemu-user with the arm64 C library (the arm64
# agent build runs under it).
# Skips whatever is already present; needs Debian/Ubuntu (apt) and root or sudo for the rest.
set -euo pipefail

missing=()
have() { command -v "$1" >/dev/null 2>&1 || [ -x "$1" ]; }
have chromium || missing+=(chromium)
have /usr/sbin/sshd || missing+=(openssh-server)
have caddy || missing+=(caddy)
have /usr/sbin/mosquitto || missing+=(mosquitto)
have tmux || missing+=(tmux)
have systemd-analyze || missing+=(systemd)
have promtool || missing+=(prometheus)
have qemu-aarch64 || missing+=(qemu-user)
have /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 || missing+=(libc6-arm64-cross)
have curl || missing+=(curl) # the agent installer's test runs `curl … /install.sh | sh`
have sudo || missing+=(sudo) # …and as another user, elevating through sudo (tests/enrolment/install-line.test.ts)

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: chromium, openssh-server, caddy, mosquitto, tmux, systemd-analyze, promtool, qemu-user, curl and sudo are present"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup: please install these packages with your package manager: ${missing[*]}" >&2
  exit 1
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    echo "setup: installing ${missing[*]} needs root; run as root or install sudo" >&2
    exit 1
  fi
fi

echo "setup: installing ${missing[*]} (apt)"
# The tests start their own sshd/mosquitto/caddy on loopback ports: keep the packages' system
# services from starting during install.
policy=/usr/sbin/policy-rc.d
added_policy=""
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
  $sudo chmod +x "$policy"
  added_policy=1
fi
cleanup() { if [ -n "$added_policy" ]; then $sudo rm -f "$policy"; fi; }
trap cleanup EXIT

$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
echo "setup: done"
