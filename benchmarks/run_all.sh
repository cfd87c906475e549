#!/usr/bin/env bash
# `make bench`: run every benchmark (each starts its own ZooKeeper / Kafka / Spark and prints its figures),
# then one table of every target figure: measured, the raw limit of the same run, ratio, target
# (also written as Markdown with the machine described to build/bench-results.md).
set -euo pipefail
cd "$(dirname "$0")/.."
results="$(mktemp -t configctl-bench.XXXXXX)"
trap 'rm -f "$results"' EXIT
export CONFIGCTL_BENCH_RESULTS="$results"
for script in write_path cold_start propagation fleet bulk_apply kafka_peer kraft_peer flight_recorder migration sidecar audit console; do
  if [ -f "benchmarks/$script.py" ]; then
    printf '\n== benchmarks/%s.py\n' "$script"
    python "benchmarks/$script.py"
  fi
done
printf '\n== every target, beside its raw limit from the same run\n'
python benchmarks/results.py "$results"
# The same table in Markdown, the machine described, for benchmarks/RESULTS.md.
mkdir -p build
python benchmarks/results.py "$results" --markdown > build/bench-results.md
printf '\n(Markdown of this run, for benchmarks/RESULTS.md: build/bench-results.md)\n'

