#!/usr/bin/env bash
# What any hop costs on this machine, against what the gateway adds (benchmarks/README.md, "Gateway: what
# any hop costs on this machine"): the paced fake engines, then relays in front of engine 1, all measured by
# GatewayLatency's compare mode (same client, 64 streams, same streamed chat completion) in alternating rounds
# against the direct call. From the repository root, after
# ./mvnw -q -B -ntp -DskipTests -pl gateway -am package ; run it under /work/bin/build on the shared machine.
#   benchmarks/gateway-baseline.sh OUTDIR [PER_STREAM [WARM_UP]]
# env: SIDES (gateway,scg-fixed,bare,nginx; also socat, gateway-b), STREAMS (64), ROUNDS (3),
#      TTFT/ITL/TOKENS (50/20/64), GW_OPTS / GW_B_OPTS (JVM options of gateway / gateway-b),
#      GW_B_ARGS (extra arguments of gateway-b), BARE_OPTS (JVM options of the bare relay),
#      WARM_STREAMS (256: the warm-up runs WARM_UP requests per stream on that many streams, so that the JITs
#      compile sooner), SETTLE (60: after the warm-up, wait up to that many seconds for the machine to be under 15 %
#      busy, so that the JITs have drained their queues).
# Sides: gateway = the jar as shipped; gateway-b = the jar again, with GW_B_OPTS / GW_B_ARGS (A/B of a knob);
# scg-fixed = the same jar with the routing route off and a plain Spring Cloud Gateway route to engine 1
# (no routing filter, no body read, no tap, no log line); bare = BareRelay (Reactor Netty, same versions);
# nginx = nginx with buffering off and upstream keep-alive (apt-get install nginx-light); socat = a TCP relay,
# one process per connection.
set -u
OUT=$(realpath -m "$1"); PER=${2:-8}; WARM=${3:-8}
mkdir -p "$OUT"
SIDES=${SIDES:-gateway,scg-fixed,bare,nginx}
E1=http://127.0.0.1:28001
BACKENDS=(--prefix-router.backends[0].id=e1 --prefix-router.backends[0].url=$E1 --prefix-router.backends[0].models=demo
  --prefix-router.backends[1].id=e2 --prefix-router.backends[1].url=http://127.0.0.1:28002 --prefix-router.backends[1].models=demo)
PIDS=()
java -Dsun.net.httpserver.nodelay=true -Dsun.net.httpserver.idleInterval=3600 -Dsun.net.httpserver.maxIdleConnections=4096 \
  gateway/src/test/java/dev/prefixrouter/gateway/FakeEngine.java \
  --ttft-ms=${TTFT:-50} --itl-ms=${ITL:-20} --tokens=${TOKENS:-64} 28001 28002 > "$OUT/eng.log" 2>&1 &
PIDS+=($!)
TARGETS=""; HEALTH=()
for side in ${SIDES//,/ }; do
  case $side in
    gateway) port=28080
      java ${GW_OPTS:-} -jar gateway/target/gateway.jar --server.port=$port "${BACKENDS[@]}" > "$OUT/gateway.log" 2>&1 &
      HEALTH+=(http://127.0.0.1:$port/actuator/health) ;;
    gateway-b) port=28085
      java ${GW_B_OPTS:-} -jar gateway/target/gateway.jar --server.port=$port "${BACKENDS[@]}" ${GW_B_ARGS:-} > "$OUT/gateway-b.log" 2>&1 &
      HEALTH+=(http://127.0.0.1:$port/actuator/health) ;;
    scg-fixed) port=28081
      java ${GW_OPTS:-} -jar gateway/target/gateway.jar --server.port=$port "${BACKENDS[@]}" \
        --prefix-router.gateway.routes-enabled=false --spring.cloud.gateway.server.webflux.routes[0].id=fixed \
        --spring.cloud.gateway.server.webflux.routes[0].uri=$E1 \
        --spring.cloud.gateway.server.webflux.routes[0].predicates[0]=Path=/v1/** > "$OUT/scg-fixed.log" 2>&1 &
      HEALTH+=(http://127.0.0.1:$port/actuator/health) ;;
    bare) port=28082
      [ -d "$OUT/lib/BOOT-INF/lib" ] || unzip -q -o gateway/target/gateway.jar 'BOOT-INF/lib/*' -d "$OUT/lib"
      java ${BARE_OPTS:--Dreactor.netty.ioWorkerCount=$(nproc)} -cp "$OUT/lib/BOOT-INF/lib/*" \
        gateway/src/test/java/dev/prefixrouter/gateway/BareRelay.java $port $E1 > "$OUT/bare.log" 2>&1 & ;;
    nginx) port=28083
      mkdir -p "$OUT/nginx"
      cat > "$OUT/nginx/nginx.conf" <<EOF
worker_processes auto;
error_log stderr warn;
pid $OUT/nginx/nginx.pid;
events { worker_connections 1024; }
http {
  access_log off;
  keepalive_timeout 3600s;
  upstream engine { server 127.0.0.1:28001; keepalive 128; }
  server {
    listen 127.0.0.1:$port;
    location / {
      proxy_pass http://engine;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
    }
  }
}
EOF
      nginx -p "$OUT/nginx" -c "$OUT/nginx/nginx.conf" -g 'daemon off;' > "$OUT/nginx.log" 2>&1 & ;;
    socat) port=28084
      socat TCP-LISTEN:$port,bind=127.0.0.1,fork,reuseaddr,nodelay TCP:127.0.0.1:28001,nodelay > "$OUT/socat.log" 2>&1 & ;;
    *) echo "unknown side $side" >&2; kill "${PIDS[@]}"; exit 2 ;;
  esac
  PIDS+=($!)
  TARGETS="${TARGETS:+$TARGETS,}$side=http://127.0.0.1:$port"
done
for url in "${HEALTH[@]}"; do
  for _ in $(seq 1 180); do curl -sf "$url" > /dev/null && break; sleep 0.5; done
done
for side_url in ${TARGETS//,/ }; do
  port=${side_url##*:}
  for _ in $(seq 1 120); do (exec 3<> /dev/tcp/127.0.0.1/$port) 2> /dev/null && break; sleep 0.5; done
done
sleep 2
timeout 600 java -Drounds=${ROUNDS:-3} -DwarmStreams=${WARM_STREAMS:-256} -Dsettle=${SETTLE:-60} gateway/src/test/java/dev/prefixrouter/gateway/GatewayLatency.java \
  $E1 "$TARGETS" "${STREAMS:-64}" "$PER" 0 "$WARM" > "$OUT/lat.txt" 2>&1
kill "${PIDS[@]}"; wait "${PIDS[@]}" 2> /dev/null
cat "$OUT/lat.txt"
