#!/usr/bin/env bash
# Alternates two benchmark jars, one JVM per run, so that a shared host's drift hits both alike:
#   benchmarks/ab.sh OLD.jar NEW.jar [ROUNDS] [BENCHMARK REGEX]
# Prints one line per run: the jar and the benchmark's throughput (ops/us, all threads together).
# Default: 3 rounds of RouteBenchmark.routeHeld2Threads (2 + 3 two-second iterations per run).
# Build the two jars from the two commits (`./mvnw -q -B -DskipTests package`, then copy
# benchmarks/target/benchmarks.jar aside) and compare round by round, not the averages.
set -euo pipefail
if [[ $# -lt 2 ]]; then
  sed -n '2,6p' "$0" >&2
  exit 2
fi
old=$1
new=$2
rounds=${3:-3}
bench=${4:-'RouteBenchmark.routeHeld2Threads$'}
for jar in "$old" "$new"; do
  [[ -r $jar ]] || { echo "cannot read $jar" >&2; exit 2; }
done
for ((i = 1; i <= rounds; i++)); do
  for jar in "$old" "$new"; do
    score=$(java -jar "$jar" jmh "$bench" -bm thrpt -wi 2 -i 3 -w 2 -r 2 2>&1 |
      awk '/^[A-Za-z]+Benchmark\./ && $2 == "thrpt" {print $4}')
    echo "round $i $jar ${score:-failed}"
  done
done
