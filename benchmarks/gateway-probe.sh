#!/usr/bin/env bash
# Added latency of the gateway at 64 paced streams, with per-request timestamps from the client, the
# gateway (LatencyProbe) and the fake engines, joined by X-Request-Id (benchmarks/README.md, "Gateway:
# where the added latency goes"). From the repository root, after
# ./mvnw -q -B -ntp -DskipTests -pl gateway -am package ; run it under /work/bin/build on the shared machine.
#   benchmarks/gateway-probe.sh OUTDIR [PER_STREAM [WARM_UP]] [-- GATEWAY_JVM_OPTIONS...]
# env: STREAMS (64), TTFT/ITL/TOKENS (50/20/64, FakeEngine pacing), PROBE=0 to run without the probes.
set -u
OUT=$1; PER=${2:-24}; WARM=${3:-24}; shift $(( $# < 3 ? $# : 3 )); [ "${1:-}" = "--" ] && shift
mkdir -p "$OUT"
STREAMS=${STREAMS:-64}
if [ "${PROBE:-1}" = 0 ]; then EP=""; GP=""; CP=""; else
  EP="-Dfakeengine.probe=$OUT/eng.txt"; GP="-Dprefixrouter.gateway.latency-probe=$OUT/gw.txt"; CP="-Dprobe=$OUT/cli.txt"; fi
java -Dsun.net.httpserver.nodelay=true $EP gateway/src/test/java/dev/prefixrouter/gateway/FakeEngine.java \
  --ttft-ms=${TTFT:-50} --itl-ms=${ITL:-20} --tokens=${TOKENS:-64} 28001 28002 > "$OUT/eng.log" 2>&1 &
ENGINES=$!
java $GP "$@" -jar gateway/target/gateway.jar --server.port=28080 \
  --prefix-router.backends[0].id=e1 --prefix-router.backends[0].url=http://127.0.0.1:28001 --prefix-router.backends[0].models=demo \
  --prefix-router.backends[1].id=e2 --prefix-router.backends[1].url=http://127.0.0.1:28002 --prefix-router.backends[1].models=demo > "$OUT/gw.log" 2>&1 &
GATEWAY=$!
for _ in $(seq 1 120); do curl -sf http://127.0.0.1:28080/actuator/health > /dev/null && break; sleep 0.5; done
timeout 280 java $CP gateway/src/test/java/dev/prefixrouter/gateway/GatewayLatency.java \
  http://127.0.0.1:28001 http://127.0.0.1:28080 "$STREAMS" "$PER" "$GATEWAY" "$WARM" > "$OUT/lat.txt" 2>&1
kill "$GATEWAY" "$ENGINES"; wait "$GATEWAY" "$ENGINES" 2> /dev/null  # the probes write their files at exit
cat "$OUT/lat.txt"
[ "${PROBE:-1}" = 0 ] || python3 benchmarks/gateway-probe-report.py "$OUT"
