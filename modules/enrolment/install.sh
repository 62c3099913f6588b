#!/bin/sh
# Outpost agent installer, served by Outpost at /install.sh (modules/enrolment/install.sh).
#   curl -fsSL __OUTPOST_URL__/install.sh | sh -s -- --token <enrolment token>
# Downloads the agent for this machine from the same server, checks its SHA-256, writes the
# configuration, installs and starts the service, and registers the device. Running it again changes
# nothing that is already in place. As root it needs nothing more; as another user its privileged steps
# go through sudo.
set -eu

SERVER="__OUTPOST_URL__"
TOKEN=""
PREFIX=""
START=1
FORMAT=auto
SSH_PORT=""

usage() {
  cat <<USAGE
Install the Outpost agent and enrol this device.

usage: install.sh --token <enrolment token> [options]

  --token <token>   enrolment token (Outpost: Settings -> Enrolment tokens)
  --server <url>    Outpost's address (default: $SERVER)
  --prefix <dir>    install below <dir> instead of / (a throwaway root: no service, no package)
  --binary          install the plain binary even where dpkg is available
  --no-start        install and configure, but neither start the service nor register
  --ssh-port <port> with --prefix: also set up a private sshd on 127.0.0.1:<port> that the browser
                    terminal logs in through as $(id -un) (what the Debian package's support user does)
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
    --ssh-port) [ $# -ge 2 ] || fail "--ssh-port needs a value"; SSH_PORT="$2"; shift 2 ;;
    --ssh-port=*) SSH_PORT="${1#--ssh-port=}"; shift ;;
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
if [ -n "$SSH_PORT" ]; then
  [ -n "$PREFIX" ] || fail "--ssh-port goes with --prefix (a full install gets the package's support user and sshd drop-in)"
  case "$SSH_PORT" in *[!0-9]* | "") fail "--ssh-port needs a port number" ;; esac
  [ -x /usr/sbin/sshd ] || fail "--ssh-port needs OpenSSH's server (/usr/sbin/sshd: package openssh-server)"
  command -v ssh-keygen >/dev/null 2>&1 || fail "--ssh-port needs ssh-keygen (package openssh-client)"
fi
# Privileged steps run as root: directly when root, through sudo otherwise; a --prefix install needs neither.
AS_ROOT=""
if [ -z "$PREFIX" ] && [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || fail "installing needs root: run the line as root, install sudo, or use --prefix <dir>"
  AS_ROOT=sudo
  echo "Not root: installing through sudo (it may ask for your password)."
fi
if [ "$FORMAT" = auto ]; then
  if [ -z "$PREFIX" ] && command -v dpkg >/dev/null 2>&1; then FORMAT=deb; else FORMAT=binary; fi
fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT INT TERM

# What to do when the server's TLS certificate is not trusted here (curl exits 60; 35 for a failed handshake).
tls_advice() {
  cat >&2 <<ADVICE
install.sh: this device does not trust $SERVER's certificate. Behind Caddy's internal CA (tls internal,
  a local trial) either use Outpost's own address instead of Caddy's, for the download and the agent:
    curl -fsSL http://<outpost host>:4000/install.sh | sh -s -- --server http://<outpost host>:4000 --token ...
  or make the device trust Caddy's root certificate (on the Caddy machine:
  /var/lib/caddy/.local/share/caddy/pki/authorities/local/root.crt): copy it to
  /usr/local/share/ca-certificates/caddy-local.crt, run update-ca-certificates, and give the agent
  NODE_EXTRA_CA_CERTS=/usr/local/share/ca-certificates/caddy-local.crt in its environment (docs/agent.md).
ADVICE
}

# Downloads $SERVER/$1 to $2; on failure says why: the server's own explanation, or curl's.
download() { # <path> <target>
  code=$(curl -sSL --retry 3 -o "$2" -w '%{http_code}' "$SERVER/$1" 2>"$WORK/curl.err") || {
    status=$?
    cat "$WORK/curl.err" >&2
    case $status in 35 | 60) tls_advice ;; esac
    fail "could not download $SERVER/$1"
  }
  case "$code" in
    2??) ;;
    *)
      # Outpost explains a refusal in JSON: {"error":{"code":…,"message":…}}.
      reason=$(sed -n 's/.*"message":"\([^"]*\)".*/\1/p' "$2" | head -n 1)
      fail "could not download $SERVER/$1: the server answered $code${reason:+: $reason}"
      ;;
  esac
}

# Downloads a file and its .sha256 from the server, and checks one against the other.
fetch() {
  download "downloads/$1" "$WORK/$1"
  download "downloads/$1.sha256" "$WORK/$1.sha256"
  want=$(cut -d' ' -f1 "$WORK/$1.sha256")
  got=$(sha256sum "$WORK/$1" | cut -d' ' -f1)
  [ "$want" = "$got" ] || fail "$1: SHA-256 $got, expected $want: not installing it"
  echo "downloaded $1 (SHA-256 verified)"
}

# Replaces a file only when its content changes.
put() { # <source> <target> <mode>
  if $AS_ROOT test -f "$2" && $AS_ROOT cmp -s "$1" "$2"; then
    echo "unchanged: $2"
  else
    $AS_ROOT mkdir -p "$(dirname "$2")"
    $AS_ROOT install -m "$3" "$1" "$2"
    echo "installed: $2"
  fi
}

ETC="$PREFIX/etc/outpost"
SSHD_DIR="$PREFIX/etc/outpost/sshd"
CONFIG="$ETC/agent.yaml"
if [ "$FORMAT" = deb ]; then
  PKG="outpost-agent_$DEBARCH.deb"
  fetch "$PKG"
  installed=$(dpkg-query -W -f '${Version}' outpost-agent 2>/dev/null || true)
  offered=$(dpkg-deb -f "$WORK/$PKG" Version)
  if [ "$installed" = "$offered" ]; then echo "unchanged: outpost-agent $installed"; else $AS_ROOT dpkg -i "$WORK/$PKG"; fi
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
  if [ -n "$SSH_PORT" ]; then
    echo "ssh_target_user: $(id -un)"
    echo "ssh_host_key_path: $SSHD_DIR/ssh_host_ed25519_key.pub"
    echo "tunnel:"
    echo "  ssh_target: 127.0.0.1:$SSH_PORT"
  fi
} >"$WORK/agent.yaml"
if $AS_ROOT test -f "$CONFIG" && ! $AS_ROOT grep -q "^# Written by Outpost's install.sh" "$CONFIG"; then
  # Someone's own configuration (or the package's default): keep their settings, set ours.
  $AS_ROOT grep -v -e '^server_url:' -e '^enrolment_token:' "$CONFIG" >>"$WORK/agent.yaml" || true
fi
put "$WORK/agent.yaml" "$CONFIG" 0600

# What the Debian package's support user and sshd drop-in give the browser terminal, for a --prefix
# install: a private sshd on loopback that lets in only this user, with keys from the file the agent writes.
if [ -n "$SSH_PORT" ]; then
  install -d -m 0700 "$PREFIX/home/outpost-support/.ssh" "$SSHD_DIR" "$PREFIX/run"
  [ -f "$SSHD_DIR/ssh_host_ed25519_key" ] \
    || ssh-keygen -q -t ed25519 -N '' -C "outpost-agent sshd" -f "$SSHD_DIR/ssh_host_ed25519_key"
  cat >"$WORK/sshd_config" <<SSHD
# Written by Outpost's install.sh --ssh-port: the browser terminal's way in (docs/terminal.md).
ListenAddress 127.0.0.1
Port $SSH_PORT
HostKey $SSHD_DIR/ssh_host_ed25519_key
PidFile $PREFIX/run/outpost-sshd.pid
AllowUsers $(id -un)
AuthorizedKeysFile $PREFIX/home/outpost-support/.ssh/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
# The prefix may sit under a world-writable directory such as /tmp, which strict modes refuse.
StrictModes no
AllowTcpForwarding no
AllowAgentForwarding no
AllowStreamLocalForwarding no
X11Forwarding no
PermitTunnel no
PrintMotd no
AcceptEnv LANG LC_*
SSHD
  put "$WORK/sshd_config" "$SSHD_DIR/sshd_config" 0600
fi

if [ "$START" -eq 0 ]; then
  echo "Installed. Start it with: $BIN --config $CONFIG poll"
  exit 0
fi

if [ -z "$PREFIX" ] && [ -d /run/systemd/system ]; then
  if [ "$FORMAT" = binary ]; then
    download downloads/outpost-agent.service "$WORK/outpost-agent.service"
    put "$WORK/outpost-agent.service" /etc/systemd/system/outpost-agent.service 0644
    $AS_ROOT systemctl daemon-reload
  fi
  $AS_ROOT systemctl enable outpost-agent.service >/dev/null 2>&1
  $AS_ROOT systemctl restart outpost-agent.service
  echo "The outpost-agent service is running: it registers this device (journalctl -u outpost-agent)."
  echo "A device enrolled with a token that does not approve at once waits for approval in Outpost's console (Devices); it starts by itself once approved."
else
  if [ -n "$SSH_PORT" ]; then
    pid=$(cat "$PREFIX/run/outpost-sshd.pid" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      kill -HUP "$pid" # rereads its configuration
      echo "unchanged: sshd on 127.0.0.1:$SSH_PORT (pid $pid)"
    else
      [ "$(id -u)" -ne 0 ] || mkdir -p /run/sshd # its privilege-separation directory, when run as root
      /usr/sbin/sshd -f "$SSHD_DIR/sshd_config" || fail "sshd did not start on 127.0.0.1:$SSH_PORT (is the port free?)"
      echo "started: sshd on 127.0.0.1:$SSH_PORT for the browser terminal (stop it: kill \$(cat $PREFIX/run/outpost-sshd.pid))"
    fi
  fi
  # No service manager here: register now, and say how to run the agent.
  status=0
  $AS_ROOT "$BIN" --config "$CONFIG" register --max-attempts 1 || status=$?
  # Exit 3: registered, waiting for an operator's approval (the agent printed what happens next).
  [ "$status" -eq 0 ] || [ "$status" -eq 3 ] || echo "Registration did not succeed (the reason is above): fix it and run the line again, or start the agent, which keeps trying."
  echo "No systemd here. Run the agent with: ${AS_ROOT:+$AS_ROOT }$BIN --config $CONFIG poll"
fi
