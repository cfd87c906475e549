#!/usr/bin/env bash
# The KRaft tour, run by `make demo` after tour.sh: a real Kafka 4.4 cluster with no ZooKeeper
# (two brokers and a controller of their own), configctl writing every family through the brokers
# (the Admin API) and reading it back, Kafka 4's own kafka-configs.sh agreeing, a broker's own
# refusal, history kept in the cluster, plan/apply, rollback, a canary judged by the brokers, and a
# write by Kafka's tool seen as a version moved and dated by configctl's flight recorder beside
# broker 1. Everything it starts it stops. About a minute.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/.."
work="$(mktemp -d -t configctl-kraft-demo.XXXXXX)"
kraft_pid=""
recorder_pid=""

cleanup() {
  if [ -n "$recorder_pid" ]; then
    kill "$recorder_pid" 2>/dev/null || true
    wait "$recorder_pid" 2>/dev/null || true
  fi
  # the starter stops every node (brokers, then their controller) on SIGTERM
  if [ -n "$kraft_pid" ]; then
    kill "$kraft_pid" 2>/dev/null || true
    wait "$kraft_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
# a command as an operator would type it: an argument with spaces or brackets in quotes
typed() {
  local arg out=()
  for arg in "$@"; do
    if [[ "$arg" =~ [^A-Za-z0-9_./:=,@%+-] ]]; then out+=("'$arg'"); else out+=("$arg"); fi
  done
  printf '$ %s\n' "${out[*]}"
}
show() { typed "$@"; "$@"; }
# Kafka 4's kafka-configs.sh (org.apache.kafka.tools.ConfigCommand, a JVM: about 3 s a run)
kafka_configs() {
  typed kafka-configs.sh "$@"
  "${kafka_configs[@]}" "$@"
}

step "Start a real Kafka 4.4 cluster in KRaft mode: brokers 1 and 2, controller 100, no ZooKeeper"
kraft_args=(start --brokers 2 --work-dir "$work/kraft" --info "$work/kraft.env")
printf '$ python examples/kraft_cluster.py %s &\n' "${kraft_args[*]}"
python examples/kraft_cluster.py "${kraft_args[@]}" >"$work/kraft.log" 2>&1 &
kraft_pid="$!"
for _ in $(seq 900); do  # it writes kraft.env once every broker serves and is registered
  [ -f "$work/kraft.env" ] || ! kill -0 "$kraft_pid" 2>/dev/null && break
  sleep 0.2
done
if [ ! -f "$work/kraft.env" ]; then
  cat "$work/kraft.log" >&2
  echo "error: the Kafka 4 cluster did not start" >&2
  exit 1
fi
cat "$work/kraft.log"
. "$work/kraft.env"  # bootstrap, controllers, cluster_id, broker_<id>_bootstrap, kafka_configs (an array)
echo "\$ export CONFIGCTL_BOOTSTRAP_SERVER=$bootstrap   # configctl finds a KRaft cluster there (a finalized metadata.version)"
export CONFIGCTL_BOOTSTRAP_SERVER="$bootstrap"

step "The flight recorder beside broker 1: every committed config write, whoever made it, kept in the cluster"
# it reads broker 1's metadata log from its disk (read-only) into the topic _configctl_metadata
typed configctl listener run --broker-id 1 --server-properties "$broker_1_properties" '&'
configctl listener run --broker-id 1 --server-properties "$broker_1_properties" >"$work/recorder.log" 2>&1 &
recorder_pid="$!"
for _ in $(seq 150); do
  grep -q "recording broker" "$work/recorder.log" 2>/dev/null || ! kill -0 "$recorder_pid" 2>/dev/null && break
  sleep 0.2
done
head -n 1 "$work/recorder.log"
show python examples/kafka_brokers.py create-topic --bootstrap "$bootstrap" --topic orders --replication-factor 2

step "Every family, written through the brokers (each write checked against its version and read back)"
show configctl alter --topic orders --add-config 'retention.ms=86400000,cleanup.policy=[compact,delete]' --reason "tour: orders keep a day"
show configctl alter --broker-defaults --add-config 'log.retention.ms=3600000' --reason "tour"
show configctl alter --broker 2 --add-config 'log.cleaner.threads=2'
show configctl alter --user alice --add-config 'consumer_byte_rate=2048,SCRAM-SHA-256=[iterations=8192,password=alice-secret]'
show configctl alter --client app1 --add-config 'producer_byte_rate=1024'
show configctl alter --user alice --client app1 --add-config 'request_percentage=50'
show configctl alter --user-defaults --add-config 'consumer_byte_rate=4096'
show configctl alter --ip 10.1.2.3 --add-config 'connection_creation_rate=10'

step "Read back by configctl (the SCRAM credential masked)"
show configctl describe --topic orders
show configctl describe --entity-type users

step "Read back by Kafka 4's own kafka-configs.sh: the brokers agree"
kafka_configs --bootstrap-server "$bootstrap" --describe --entity-type topics --entity-name orders
kafka_configs --bootstrap-server "$bootstrap" --describe --entity-type brokers --entity-default
kafka_configs --bootstrap-server "$bootstrap" --describe --entity-type users
kafka_configs --bootstrap-server "$bootstrap" --describe --entity-type ips --entity-name 10.1.2.3
# each broker asked in turn (DescribeConfigs): only broker 2 runs two cleaner threads
show python examples/kafka_brokers.py describe --bootstrap "$bootstrap" --broker-config --key log.cleaner.threads \
  --expect 1 --expect-on 2=2

step "A change a broker refuses: its own reason, in one line, and nothing changed"
# A running broker takes at most twice its cleaner threads (1 -> 9 is refused by broker 1 itself);
# --dry-run asks the broker to validate only (validateOnly), so it refuses the same way
show configctl alter --broker 1 --add-config 'log.cleaner.threads=9' --dry-run \
  || echo "(exit status $?: the broker refused it)"
show configctl alter --broker 1 --add-config 'log.cleaner.threads=9' \
  || echo "(exit status $?: the broker refused it, nothing changed)"
show configctl alter --topic orders --add-config 'retension.ms=1' || echo "(exit status $?: refused before any request)"

step "History lives in the cluster itself (topic _configctl_history): who, when, why"
show configctl history --topic orders

step "Desired state: plan (exit 2: changes), apply, plan again (exit 0)"
cat >"$work/desired.yaml" <<'EOF'
topics:
  orders:
    retention.ms: 604800000
    cleanup.policy: [compact, delete]
    min.insync.replicas: 2
brokers:
  <default>:
    log.retention.ms: 259200000
    min.insync.replicas: 1
clients:
  app1:
    producer_byte_rate: 4096
EOF
echo "\$ cat desired.yaml"
cat "$work/desired.yaml"
show configctl plan -f "$work/desired.yaml" || echo "(exit status $?: there are changes)"
show configctl apply -f "$work/desired.yaml" --yes --reason "OPS-42: retention per the file"
show configctl plan -f "$work/desired.yaml"
kafka_configs --bootstrap-server "$bootstrap" --describe --entity-type topics --entity-name orders

step "Rollback: orders back to its first version (a new version, recorded)"
show configctl rollback --topic orders --to 0 --yes --reason "undo OPS-42 for orders"
show configctl history --topic orders

step "A canary on KRaft: broker 1 first, judged by what it reports, then promoted to every broker"
# the record lives in the cluster (topic _configctl_rollouts); the wait and the soak ask the brokers
show configctl alter --broker-defaults --add-config 'log.cleaner.backoff.ms=16000' --canary 1 --soak 2s \
  --wait 30 --reason "OPS-43: slower cleaner backoff"
show configctl rollout list
kafka_configs --bootstrap-server "$bootstrap" --describe --entity-type brokers --entity-default

step "A write by Kafka's own tool moves the version: configctl's --if-version refuses (exit 5)"
known="$(configctl describe --topic orders --output json | python -c 'import json, sys; print(json.load(sys.stdin)[0]["version"])')"
echo "configctl last saw topic orders at version $known"
kafka_configs --bootstrap-server "$bootstrap" --alter --entity-type topics --entity-name orders --add-config retention.ms=7777777
show configctl alter --topic orders --add-config 'retention.ms=5' --if-version "$known" \
  || echo "(exit status $?: a conflict; nothing written)"
sleep 1  # the recorder records a committed write within about a second
show configctl history --topic orders   # the recorder dates Kafka's tool's write: its commit time and offset
show configctl describe --topic orders

step "Done: stopping the brokers, then their controller"
