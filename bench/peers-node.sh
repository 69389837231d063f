#!/bin/sh
# The peers comparison with throughway as users run it: ../shared/peers/run.sh with the deployed node
# (bench/start-node.ts: `throughway start`, server_role "default", one open API file) as its extra target,
# named "throughway-node", requests under the API's context and version (EXTRA_PREFIX=/bench/1.0.0).
# The harness's own knobs pass through (ROUNDS, DURATION, WARMUP, TOOLS, SCENARIOS, TARGETS, EXTRA_PORT);
# PEERS_DIR names another copy of the harness. Builds first when dist/ lacks the starter.
#
#   ROUNDS=3 DURATION=6 WARMUP=2 TOOLS=wrk TARGETS=nginx-1w-tuned,haproxy-1t sh bench/peers-node.sh
#
# Prints the harness's markdown tables on stdout (and the path of its raw JSON, "raw: ...").
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
peers=${PEERS_DIR:-$root/../shared/peers}
[ -f "$peers/run.sh" ] || { echo "peers-node: $peers/run.sh not found (set PEERS_DIR)" >&2; exit 2; }
[ -f "$root/dist/bench/start-node.js" ] || (cd "$root" && npm run -s build)
export EXTRA_CMD="$(command -v node) $root/dist/bench/start-node.js"
export EXTRA_PREFIX=/bench/1.0.0
export EXTRA_NAME="${EXTRA_NAME:-throughway-node}"
export EXTRA_PORT="${EXTRA_PORT:-8280}"
# The node opens its store (migrations) and the key manager before the gateway's port: more than the
# transport's start, far more under load.
export EXTRA_START_S="${EXTRA_START_S:-120}"
unset EXTRA_HEADERS
exec bash "$peers/run.sh"
