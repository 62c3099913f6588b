#!/usr/bin/env bash
# `npm run check:npm12`: the README's first line as a user with npm 12 runs it. A copy of the committed
# tree gets a clean install with npm 12, strict about install scripts that package.json's allowScripts
# does not review (an unreviewed one fails the install, naming it), then `npm start` must answer /readyz
# and show the setup page. Runs in a temporary directory; stops what it started and removes it.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
npm12="npm@12"
work=$(mktemp -d "${TMPDIR:-/tmp}/outpost-npm12-XXXXXX")
# A folder others may enter, as most checkouts are (.ci/run runs the suite from a private one).
chmod 755 "$work"
server=""
cleanup() {
  if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then
    # npm start runs ./outpost in its own process group: end the whole group, then wait for it.
    kill -TERM -- "-$server" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$server" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "check:npm12: copying the committed tree to $work"
git -C "$root" ls-files -z | (cd "$root" && xargs -0 tar -cf - --no-recursion) | tar -xf - -C "$work"
cd "$work"

echo "check:npm12: npm $(npx -y "$npm12" --version 2>/dev/null) ci --strict-allow-scripts"
npx -y "$npm12" ci --strict-allow-scripts --no-audit --no-fund 2>&1 | grep -v -e EBADENGINE -e 'npm warn cli npm v12' || {
  echo "check:npm12: npm 12 could not install Outpost (see above)" >&2
  exit 1
}
test -x node_modules/.bin/bun || { echo "check:npm12: no Bun after install" >&2; exit 1; }

port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
export PORT="$port" HOST=127.0.0.1 DATA_DIR="$work/data" LOG_FORMAT=json
unset DATABASE_URL
setsid npx -y "$npm12" start > "$work/start.log" 2>&1 &
server=$!
echo "check:npm12: npm start (port $port)"
ready=""
for _ in $(seq 1 120); do
  if curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; then ready=1; break; fi
  kill -0 "$server" 2>/dev/null || break
  sleep 0.5
done
if [ -z "$ready" ]; then
  echo "check:npm12: Outpost did not become ready; its output:" >&2
  tail -n 40 "$work/start.log" >&2
  exit 1
fi
if ! curl -fsS "http://127.0.0.1:$port/setup" | grep -q 'setup code'; then
  echo "check:npm12: /readyz answered but the setup page did not" >&2
  exit 1
fi
echo "check:npm12: npm 12 installs Outpost, and npm start reaches the setup page"
