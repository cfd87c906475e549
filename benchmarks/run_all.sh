#!/usr/bin/env bash
# `make bench`: run every benchmark; each starts its own ZooKeeper / Spark and prints its figures.
set -euo pipefail
cd "$(dirname "$0")/.."
for script in write_path propagation bulk_apply audit; do
  if [ -f "benchmarks/$script.py" ]; then
    printf '\n== benchmarks/%s.py\n' "$script"
    python "benchmarks/$script.py"
  fi
done
