#!/usr/bin/env bash
# Packet latency and streaming bandwidth over every packet-layer transport, interleaved round by
# round with libfabric's own fi_pingpong on the same provider, so that machine noise hits all
# alike. Prints min and median per configuration and the ratios to fi_pingpong; --json for JSON.
#   bench/transport_compare.sh [--build DIR] [--rounds R] [--iterations N] [--stream N] [--json]
# Extra environment (FI_PROVIDER, BGL_OFI_*, FI_TCP_*) applies to every run.
set -euo pipefail
build=build; rounds=5; iterations=2000; stream=20000; json=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --iterations) iterations=$2; shift 2 ;;
    --stream) stream=$2; shift 2 ;;
    --json) json=1; shift ;;
    *) echo "transport_compare.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
bin=$build/bin
provider=${FI_PROVIDER:-tcp;ofi_rxm}
for tool in jq fi_pingpong mpiexec.hydra; do
  command -v $tool >/dev/null || { echo "transport_compare.sh: needs $tool" >&2; exit 2; }
done
samples=$(mktemp); trap 'rm -f "$samples"' EXIT

pl() {  # label, then bglrun arguments
  local label=$1; shift
  "$bin/bglrun" -np 2 --shape 2x1x1 "$@" --timeout 600 "$bin/pl_transport" \
    --iterations "$iterations" --stream "$stream" --json 2>/dev/null |
    jq -c --arg l "$label" '.rows[0] | {config: $l, lat32_ns, lat128_ns, lat256_ns, stream_MBps}' \
    >> "$samples"
}

fi_pp() {  # fi_pingpong over $provider on loopback: 32/128/256-byte latency, 256-byte bandwidth
  local port=$((20000 + RANDOM % 20000)) out lat=() bw=0
  for size in 32 128 256; do
    timeout 300 fi_pingpong -p "$provider" -e rdm -B $port -I "$iterations" -S $size >/dev/null 2>&1 &
    local server=$!
    sleep 0.3
    out=$(timeout 300 fi_pingpong -p "$provider" -e rdm -P $port -I "$iterations" -S $size 127.0.0.1)
    wait $server || true
    # columns: bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
    lat+=("$(echo "$out" | awk 'NR==2 {print $7 * 1000}')")
    bw=$(echo "$out" | awk 'NR==2 {print $6}')
    port=$((port + 1))
  done
  jq -nc --argjson a "${lat[0]}" --argjson b "${lat[1]}" --argjson c "${lat[2]}" --argjson d "$bw" \
    '{config: "fi_pingpong", lat32_ns: $a, lat128_ns: $b, lat256_ns: $c, stream_MBps: $d}' \
    >> "$samples"
}

for ((r = 0; r < rounds; r++)); do
  BGL_TRANSPORT=shm pl shm/1host
  BGL_TRANSPORT=ofi pl ofi/1host
  pl ofi/2hosts --hosts 2
  fi_pp
done

summary=$(jq -s --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" --arg provider "$provider" '
  def med: sort | .[(length / 2 | floor)];
  group_by(.config) | map({config: .[0].config,
      lat32_min_ns: (map(.lat32_ns) | min), lat32_median_ns: (map(.lat32_ns) | med),
      lat256_min_ns: (map(.lat256_ns) | min), lat256_median_ns: (map(.lat256_ns) | med),
      MBps_max: (map(.stream_MBps) | max), MBps_median: (map(.stream_MBps) | med),
      samples: length}) as $rows
  | ($rows | map(select(.config == "fi_pingpong"))[0]) as $fi
  | {provider: $provider, loadavg: $load,
     rows: ($rows | map(. + {lat256_vs_fi_median: (.lat256_median_ns / $fi.lat256_median_ns),
                              MBps_vs_fi_median: (.MBps_median / $fi.MBps_median)}))}' "$samples")
if [ $json = 1 ]; then
  echo "$summary"
else
  echo "$summary" | jq -r '"# packet latency (half round trip, ns) and 256-byte packet streaming (MB/s; fi_pingpong: its ping-pong throughput), provider \(.provider), load average \(.loadavg)"'
  echo "$summary" | jq -r '(["config","lat32_min_ns","lat32_med_ns","lat256_min_ns","lat256_med_ns","MBps_max","MBps_med","lat256/fi","MBps/fi"] | @tsv),
    (.rows[] | [.config, (.lat32_min_ns|floor), (.lat32_median_ns|floor), (.lat256_min_ns|floor),
                (.lat256_median_ns|floor), (.MBps_max*100|floor/100), (.MBps_median*100|floor/100),
                (.lat256_vs_fi_median*100|floor/100), (.MBps_vs_fi_median*100|floor/100)] | @tsv)' |
    column -t
fi
