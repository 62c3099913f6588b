#!/bin/sh
# Outpost agent installer, served by Outpost at /install.sh (modules/enrolment/install.sh).
#   curl -fsSL __OUTPOST_URL__/install.sh | sudo sh -s -- --token <enrolment token>
# Downloads the agent for this machine from the same server, checks its SHA-256, writes the
# configuration, installs and starts the service, and registers the device. Running it again changes
# nothing that is already in place.
set -eu

SERVER="__OUTPOST_URL__"
TOKEN=""
PREFIX=""
START=1
FORMAT=auto

usage() {
  cat <<USAGE
Install the Outpost agent and enrol this device.

usage: install.sh --token <enrolment token> [options]

  --token <token>   enrolment token (Outpost: Settings -> Enrolment tokens)
  --server <url>    Outpost's address (default: $SERVER)
  --prefix <dir>    install below <dir> instead of / (a throwaway root: no service, no package)
  --binary          install the plain binary even where dpkg is available
  --no-start        install and configure, but neither start the service nor register
  -h, --help        this help
USAGE
}

fail() {
  echo "install.sh: $*" >&2
  exit 1
}

while [ $# -gt 0 ]; do
  case "$1" in
    --token) [ $# -ge 2 ] || fail "--token needs a value"; TOKEN="$2"; shift 2 ;;
    --token=*) TOKEN="${1#--token=}"; shift ;;
    --server) [ $# -ge 2 ] || fail "--server needs a value"; SERVER="$2"; shift 2 ;;
    --server=*) SERVER="${1#--server=}"; shift ;;
    --prefix) [ $# -ge 2 ] || fail "--prefix needs a value"; PREFIX="$2"; shift 2 ;;
    --prefix=*) PREFIX="${1#--prefix=}"; shift ;;
    --binary) FORMAT=binary; shift ;;
    --no-start) START=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; fail "unknown option: $1" ;;
  esac
done

[ -n "$TOKEN" ] || { usage >&2; fail "--token is required (create one in Outpost: Settings -> Enrolment tokens)"; }
case "$TOKEN" in *[!A-Za-z0-9_-]*) fail "the token has characters a token never has: copy it again" ;; esac
[ "$(uname -s)" = Linux ] || fail "the agent runs on Linux only"
case "$(uname -m)" in
  x86_64|amd64) ARCH=x64; DEBARCH=amd64 ;;
  aarch64|arm64) ARCH=arm64; DEBARCH=arm64 ;;
  *) fail "no agent build for $(uname -m) (x86-64 and arm64 are built)" ;;
esac
command -v curl >/dev/null 2>&1 || fail "curl is needed"
command -v sha256sum >/dev/null 2>&1 || fail "sha256sum is needed (coreutils)"
if [ -z "$PREFIX" ] && [ "$(id -u)" -ne 0 ]; then fail "run it as root (sudo sh), or with --prefix <dir>"; fi
if [ "$FORMAT" = auto ]; then
  if [ -z "$PREFIX" ] && command -v dpkg >/dev/null 2>&1; then FORMAT=deb; else FORMAT=binary; fi
fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT INT TERM

# Downloads a file and its .sha256 from the server, and checks one against the other.
fetch() {
  curl -fsSL --retry 3 -o "$WORK/$1" "$SERVER/downloads/$1" || fail "could not download $SERVER/downloads/$1"
  curl -fsSL --retry 3 -o "$WORK/$1.sha256" "$SERVER/downloads/$1.sha256" || fail "could not download $1.sha256"
  want=$(cut -d' ' -f1 "$WORK/$1.sha256")
  got=$(sha256sum "$WORK/$1" | cut -d' ' -f1)
  [ "$want" = "$got" ] || fail "$1: SHA-256 $got, expected $want: not installing it"
  echo "downloaded $1 (SHA-256 verified)"
}

# Replaces a file only when its content changes.
put() { # <source> <target> <mode>
  if [ -f "$2" ] && cmp -s "$1" "$2"; then
    echo "unchanged: $2"
  else
    mkdir -p "$(dirname "$2")"
    install -m "$3" "$1" "$2"
    echo "installed: $2"
  fi
}

ETC="$PREFIX/etc/outpost"
CONFIG="$ETC/agent.yaml"
if [ "$FORMAT" = deb ]; then
  PKG="outpost-agent_$DEBARCH.deb"
  fetch "$PKG"
  installed=$(dpkg-query -W -f '${Version}' outpost-agent 2>/dev/null || true)
  offered=$(dpkg-deb -f "$WORK/$PKG" Version)
  if [ "$installed" = "$offered" ]; then echo "unchanged: outpost-agent $installed"; else dpkg -i "$WORK/$PKG"; fi
  BIN=/usr/bin/outpost-agent
else
  FILE="outpost-agent-linux-$ARCH"
  fetch "$FILE"
  BIN="$PREFIX/usr/local/bin/outpost-agent"
  put "$WORK/$FILE" "$BIN" 0755
fi

{
  echo "# Written by Outpost's install.sh; the agent's settings: docs/agent.md."
  echo "server_url: $SERVER"
  echo "enrolment_token: $TOKEN"
  if [ -n "$PREFIX" ]; then
    echo "state_dir: $PREFIX/var/lib/outpost-agent"
    echo "authorized_keys_path: $PREFIX/home/outpost-support/.ssh/authorized_keys"
  fi
} >"$WORK/agent.yaml"
if [ -f "$CONFIG" ] && ! grep -q "^# Written by Outpost's install.sh" "$CONFIG"; then
  # Someone's own configuration (or the package's default): keep their settings, set ours.
  grep -v -e '^server_url:' -e '^enrolment_token:' "$CONFIG" >>"$WORK/agent.yaml" || true
fi
put "$WORK/agent.yaml" "$CONFIG" 0600

if [ "$START" -eq 0 ]; then
  echo "Installed. Start it with: $BIN --config $CONFIG poll"
  exit 0
fi

if [ -z "$PREFIX" ] && [ -d /run/systemd/system ]; then
  if [ "$FORMAT" = binary ]; then
    curl -fsSL -o "$WORK/outpost-agent.service" "$SERVER/downloads/outpost-agent.service" \
      || fail "could not download the service unit"
    put "$WORK/outpost-agent.service" /etc/systemd/system/outpost-agent.service 0644
    systemctl daemon-reload
  fi
  systemctl enable outpost-agent.service >/dev/null 2>&1
  systemctl restart outpost-agent.service
  echo "The outpost-agent service is running: it registers this device (journalctl -u outpost-agent)."
else
  # No service manager here: register now, and say how to run the agent.
  "$BIN" --config "$CONFIG" register --max-attempts 1 || true
  echo "No systemd here. Run the agent with: $BIN --config $CONFIG poll"
fi
