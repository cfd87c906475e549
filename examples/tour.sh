#!/usr/bin/env bash
# The end-to-end tour run by `make demo`: a real ZooKeeper, three real Kafka 3.9 brokers on it
# (ZooKeeper mode), each with a configctl listener beside it, validated writes that the listeners
# apply with sources and the brokers report (Admin API), and the Spark drift audit.
# Everything it starts it stops.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/.."
work="$(mktemp -d -t configctl-demo.XXXXXX)"
listener_pids=()
kafka_pid=""
serve_pid=""

cleanup() {
  if [ -n "$serve_pid" ]; then kill "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; fi
  for pid in "${listener_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${listener_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  # the brokers stop before their ZooKeeper (kafka_brokers.py stops every broker on SIGTERM)
  if [ -n "$kafka_pid" ]; then
    kill "$kafka_pid" 2>/dev/null || true
    wait "$kafka_pid" 2>/dev/null || true
  fi
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

step "Start three real Kafka 3.9 brokers on it (ZooKeeper mode, PLAINTEXT on 127.0.0.1)"
# Their server.properties differ as a fleet's do: broker 3 carries an old static tuning nobody
# cleaned up (the audit finds it). The jars are build/kafka's (make kafka).
kafka_args=(start --zookeeper "$CONFIGCTL_ZOOKEEPER" --brokers 3 --work-dir "$work/kafka"
  --info "$work/brokers.env" --set min.insync.replicas=2 --set log.retention.hours=168
  --set-on 3:num.io.threads=4 --set-on 3:log.retention.hours=72)
printf '$ python examples/kafka_brokers.py %s &\n' "${kafka_args[*]}"
python examples/kafka_brokers.py "${kafka_args[@]}" >"$work/kafka.log" 2>&1 &
kafka_pid="$!"
for _ in $(seq 600); do  # it writes brokers.env once every broker serves
  [ -f "$work/brokers.env" ] || ! kill -0 "$kafka_pid" 2>/dev/null && break
  sleep 0.2
done
if [ ! -f "$work/brokers.env" ]; then
  cat "$work/kafka.log" >&2
  echo "error: the Kafka brokers did not start" >&2
  exit 1
fi
cat "$work/kafka.log"
. "$work/brokers.env"  # bootstrap, broker_<id>_bootstrap, broker_<id>_properties, broker_<id>_pid

step "Beside each broker, a configctl listener reads that broker's server.properties (broker 3's with a plugin; broker 2's a sidecar that asks its broker)"
mkdir -p "$work/state"
for id in 1 2 3; do
  properties="broker_${id}_properties"
  plugin=()
  # broker 3 applies topic retention to its log directories (the real broker's, where Kafka keeps
  # the partitions), and refuses retention under a minute
  [ "$id" = 3 ] && plugin=(--plugin examples.plugins.log_retention:LogRetentionApplier)
  # broker 2's listener is a sidecar: after each change it asks broker 2 itself what it runs
  sidecar=()
  [ "$id" = 2 ] && sidecar=(--bootstrap-server "$broker_2_bootstrap")
  echo "\$ configctl ${sidecar[*]:+${sidecar[*]} }listener run --broker-id $id --server-properties ${!properties} --state-dir $work/state${plugin[*]:+ ${plugin[*]}} &"
  PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" configctl "${sidecar[@]}" listener run --broker-id "$id" \
    --server-properties "${!properties}" --state-dir "$work/state" "${plugin[@]}" \
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

step "configctl configures topics Kafka has: create orders first (Admin API, replicas on all three)"
show configctl alter --topic orders --add-config 'retention.ms=86400000' || echo "(exit status $?)"
show python examples/kafka_brokers.py create-topic --bootstrap "$bootstrap" --topic orders --replication-factor 3

step "A validated write, --wait until every broker's listener runs it, and what the brokers report"
show configctl alter --topic orders --add-config 'retention.ms=86400000,cleanup.policy=[compact,delete]' --reason "tour" --wait
show python examples/kafka_brokers.py describe --bootstrap "$bootstrap" --topic orders --key retention.ms --key cleanup.policy

step "Bad input is refused in one line, and nothing is written"
show configctl alter --topic orders --add-config 'retension.ms=1' || echo "(exit status $?)"
show configctl alter --broker-defaults --add-config 'log.dirs=/data' || echo "(exit status $?)"

step "Cluster-wide broker default and a per-broker override, as the brokers report them; a user+client quota"
# Kafka's ZooKeeper path (kafka-configs.sh --zookeeper) refuses broker configs while the brokers
# run, so that their own validation is not skipped, and so does configctl. With --bootstrap-server
# they go through the brokers (Kafka's Admin API), which validate them themselves; configctl still
# validates first and records the history.
show configctl alter --broker-defaults --add-config 'log.retention.ms=3600000' || echo "(exit status $?)"
show configctl --bootstrap-server "$bootstrap" alter --broker-defaults --add-config 'log.retention.ms=3600000'
show python examples/kafka_brokers.py describe --bootstrap "$bootstrap" --broker-config --key log.retention.ms --expect 3600000
# A running broker takes at most twice its cleaner threads: broker 2 itself refuses 1 -> 9, and says why
show configctl --bootstrap-server "$bootstrap" alter --broker 2 --add-config 'log.cleaner.threads=9' \
  || echo "(exit status $?: the broker refused it, nothing changed)"
show configctl --bootstrap-server "$bootstrap" alter --broker 2 --add-config 'log.cleaner.threads=2' --wait 20
show python examples/kafka_brokers.py describe --bootstrap "$bootstrap" --broker-config --key log.cleaner.threads \
  --expect 1 --expect-on 2=2

step "A change the broker itself vetoes, caught by broker 2's sidecar: --wait says mismatch, not applied"
# Written to ZooKeeper, past the broker's own validation (--allow-running-brokers): configctl's model
# computes 9 threads, but broker 2 refuses to go from 2 to 9 and keeps 2. Its sidecar asks it.
show configctl alter --broker 2 --add-config 'log.cleaner.threads=9' --allow-running-brokers --wait 20 \
  || echo "(exit status $?: broker 2 does not run it)"
show configctl status --broker 2
echo '$ configctl describe --effective --broker 2 --output json   (log.cleaner.threads: what broker 2 runs, and what is stored)'
configctl describe --effective --broker 2 --output json | python -c '
import json, sys
for c in json.load(sys.stdin)["configs"]:
    if c["name"] == "log.cleaner.threads":
        print(json.dumps({k: c[k] for k in ("name", "value", "source", "stored") if k in c}))'
show configctl alter --broker 2 --add-config 'log.cleaner.threads=2' --allow-running-brokers --wait 20
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
# Kafka has no such minimum: the brokers themselves run what ZooKeeper holds. The refusal is broker
# 3's listener's (its plugin keeps the old retention), and --wait's exit status is the alarm.
show python examples/kafka_brokers.py describe --bootstrap "$bootstrap" --topic orders --key retention.ms
show configctl status
show configctl status --broker 3
show configctl history --topic orders
# (version 0 is the empty config Kafka wrote when it created the topic; version 1 is the tour's)
show configctl rollback --topic orders --to 1 --yes --reason "undo the refused change" --wait

step "The past: what broker 3 ran while the refused change was the stored one, and which writes made a value"
refused_at="$(configctl history --topic orders --output json | python -c '
import json, sys
records = json.load(sys.stdin)
print(next(r["time_ms"] for r in records if r["config"].get("retention.ms") == "1000") + 500)')"
refused_iso="$(python -c 'import sys, datetime; print(datetime.datetime.fromtimestamp(int(sys.argv[1]) / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))' "$refused_at")"
echo "\$ configctl describe --effective --broker 3 --topic orders --at $refused_iso --applied-log $work/state --output json   (retention.ms)"
configctl describe --effective --broker 3 --topic orders --at "$refused_iso" --applied-log "$work/state" --output json | python -c '
import json, sys
for c in json.load(sys.stdin)["configs"]:
    if c["name"] == "retention.ms":
        print(json.dumps({k: c[k] for k in ("name", "value", "source", "stored") if k in c}))'
show configctl blame --broker 3 --topic orders --key retention.ms --applied-log "$work/state"

step "Drift on purpose: broker 3 is stopped (Kafka and its listener), and a change is made while it is down"
kill "${listener_pids[2]}"; wait "${listener_pids[2]}" 2>/dev/null || true
echo "\$ kill $broker_3_pid   # Kafka broker 3"
kill "$broker_3_pid"
for _ in $(seq 300); do kill -0 "$broker_3_pid" 2>/dev/null || break; sleep 0.2; done
show configctl alter --topic orders --add-config 'retention.ms=172800000' --wait 10 \
  || echo "(exit status $?: broker 3 is down, so --wait cannot say every broker runs it)"
show configctl status
show python examples/kafka_brokers.py describe --bootstrap "$bootstrap" --topic orders --key retention.ms

step "The Spark audit finds it (server.properties skew, per-broker overrides, a stale broker)"
show configctl audit --snapshots "$work/state" --html "$work/audit.html"
echo "(the tour removes its work directory, report included, when it ends)"

step "A canary: a cluster-wide change runs on broker 1 first, then is promoted to every broker"
show configctl alter --broker-defaults --add-config 'log.cleaner.threads=2' --canary 1 --soak 2s --allow-running-brokers \
  --check 'configctl status --broker "$CONFIGCTL_CANARY_BROKERS" >/dev/null' --wait 20 --reason "tour canary"
show python examples/kafka_brokers.py describe --bootstrap "$bootstrap" --broker-config --key log.cleaner.threads --expect 2
show configctl describe --broker-defaults
show configctl describe --broker 1
show configctl history --broker 1

step "A canary whose health check fails is aborted: broker 2 gets its exact previous bytes back, <default> is untouched"
show configctl alter --broker-defaults --add-config 'num.io.threads=4' --canary 2 --wait 20 --allow-running-brokers \
  --check 'echo "p99 produce latency 250 ms > 100 ms on broker $CONFIGCTL_CANARY_BROKERS" >&2; exit 1' \
  || echo "(exit status $?: the canary was aborted and undone)"
show configctl describe --broker 2
show configctl rollout list
show python examples/kafka_brokers.py describe --bootstrap "$bootstrap" --broker-config --key num.io.threads --expect 2

step "The fleet console: configctl serve, a live web page of what every broker runs (read-only, loopback only)"
console_port="$(python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
printf '$ configctl serve --bind 127.0.0.1:%s &\n' "$console_port"
configctl serve --bind "127.0.0.1:$console_port" 2>"$work/serve.log" &
serve_pid="$!"
echo "Open http://127.0.0.1:$console_port/ (fleet), /rollouts, /entity/topics/orders; every page is JSON under /api/"
echo "\$ curl http://127.0.0.1:$console_port/api/status   # exactly configctl status -o json"
python - "$console_port" <<'PY' || { cat "$work/serve.log" >&2; exit 1; }
import json, sys, time, urllib.request
url = f"http://127.0.0.1:{sys.argv[1]}/api/status"
for _ in range(150):  # it answers once its watches are set (well under a second here)
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            status = json.load(answer)
        break
    except OSError:
        time.sleep(0.2)
else:
    sys.exit("error: configctl serve did not answer")
for b in status["brokers"]:
    print(f"broker {b['broker_id']}: {'live' if b['live'] else 'not live'}, last applied change {b['last_applied_change']}")
PY
kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true; serve_pid=""

step "Done: stopping the listeners, the Kafka brokers and ZooKeeper"
