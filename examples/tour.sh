#!/usr/bin/env bash
# The end-to-end tour run by `make demo`: a real ZooKeeper, validated writes, three brokers'
# listeners applying them with sources, and the Spark drift audit. Everything it starts it stops.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d -t configctl-demo.XXXXXX)"
listener_pids=()

cleanup() {
  for pid in "${listener_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${listener_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  configctl zk stop --data-dir "$work/zk" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() { printf '$ %s\n' "$*"; "$@"; }

port="$(python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
step "Start a real ZooKeeper (from pyspark's jars)"
show configctl zk start --port "$port" --data-dir "$work/zk"
export CONFIGCTL_ZOOKEEPER="127.0.0.1:$port"

step "Three brokers start their listeners, each with its own server.properties (broker 3 with a plugin)"
mkdir -p "$work/state"
for id in 1 2 3; do
  plugin=()
  # broker 3 applies topic retention to its log directories, and refuses retention under a minute
  [ "$id" = 3 ] && plugin=(--plugin examples.plugins.log_retention:LogRetentionApplier)
  PYTHONPATH="$here/..${PYTHONPATH:+:$PYTHONPATH}" configctl listener run --broker-id "$id" \
    --server-properties "$here/server-$id.properties" --state-dir "$work/state" "${plugin[@]}" \
    >"$work/listener-$id.log" 2>&1 &
  listener_pids+=("$!")
done
python - "$port" <<'EOF'
import sys, time
from kazoo.client import KazooClient
client = KazooClient(f"127.0.0.1:{sys.argv[1]}"); client.start()
deadline = time.time() + 60
while time.time() < deadline:
    if client.exists("/configctl/brokers") and len(client.get_children("/configctl/brokers")) == 3:
        break
    time.sleep(0.2)
else:
    sys.exit("the three listeners did not come up")
client.stop()
EOF
echo "listeners for brokers 1, 2 and 3 are running"

step "A validated write, and --wait until every broker runs it"
show configctl alter --topic orders --add-config 'retention.ms=86400000,cleanup.policy=[compact,delete]' --reason "tour" --wait

step "Bad input is refused in one line, and nothing is written"
show configctl alter --topic orders --add-config 'retension.ms=1' || echo "(exit status $?)"
show configctl alter --broker-defaults --add-config 'log.dirs=/data' || echo "(exit status $?)"

step "Cluster-wide broker default, a per-broker override, and a user+client quota"
show configctl alter --broker-defaults --add-config 'log.retention.ms=3600000'
show configctl alter --broker 2 --add-config 'log.cleaner.threads=4'
show configctl alter --user alice --client app1 --add-config 'consumer_byte_rate=2048'
show configctl alter --user alice --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]' --wait

step "Read it back (the SCRAM credential is masked)"
show configctl describe --topic orders
show configctl describe --entity-type users

step "Each broker applied the changes: effective values and where they come from"
echo '$ configctl describe --effective --broker 1 --topic orders --output json   (three of its keys shown)'
configctl describe --effective --broker 1 --topic orders --output json | python -c '
import json, sys
for c in json.load(sys.stdin)["configs"]:
    if c["name"] in ("retention.ms", "cleanup.policy", "min.insync.replicas"):
        print(json.dumps(c))'
show configctl describe --effective --broker 2 --user alice --client app1
for id in 1 2 3; do echo "--- broker $id listener log"; tail -n 4 "$work/listener-$id.log"; done

step "A change broker 3's plugin refuses: the write is committed, and --wait says who refused it and why"
show configctl alter --topic orders --add-config 'retention.ms=1000' --wait 20 || echo "(exit status $?: a broker refused it)"
show configctl status
show configctl status --broker 3
show configctl history --topic orders
show configctl rollback --topic orders --to 0 --yes --reason "undo the refused change" --wait

step "Drift on purpose: broker 3 is stopped, and a change is made while it is down"
kill "${listener_pids[2]}"; wait "${listener_pids[2]}" 2>/dev/null || true
show configctl alter --topic orders --add-config 'retention.ms=172800000' --wait 10
show configctl status

step "The Spark audit finds it (server.properties skew, per-broker overrides, a stale broker)"
show configctl audit --snapshots "$work/state" --html "$work/audit.html"
echo "(the tour removes its work directory, report included, when it ends)"

step "A canary: a cluster-wide change runs on broker 1 first, then is promoted to every broker"
show configctl alter --broker-defaults --add-config 'log.cleaner.threads=2' --canary 1 --soak 2s \
  --check 'configctl status --broker "$CONFIGCTL_CANARY_BROKERS" >/dev/null' --wait 20 --reason "tour canary"
show configctl describe --broker-defaults
show configctl describe --broker 1
show configctl history --broker 1

step "A canary whose health check fails is aborted: broker 2 gets its exact previous bytes back, <default> is untouched"
show configctl alter --broker-defaults --add-config 'num.io.threads=16' --canary 2 --wait 20 \
  --check 'echo "p99 produce latency 250 ms > 100 ms on broker $CONFIGCTL_CANARY_BROKERS" >&2; exit 1' \
  || echo "(exit status $?: the canary was aborted and undone)"
show configctl describe --broker 2
show configctl rollout list

step "Done: stopping the listeners and ZooKeeper"
