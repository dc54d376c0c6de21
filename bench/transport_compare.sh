#!/usr/bin/env bash
# Packet latency and streaming bandwidth over every packet-layer transport, interleaved round by
# round with libfabric's own floors on the same provider, so that machine noise hits all alike:
# fi_pingpong (latency) and ofi_msg_bw (bench/ofi_msg_bw.cpp: streaming measured as fabtests'
# fi_msg_bw does, with messages of one packet's size). Prints min and median per configuration
# and the ratios of the medians to the floors; --json for JSON.
#   bench/transport_compare.sh [--build DIR] [--rounds R] [--iterations N] [--stream N]
#                              [--variant LABEL:VAR=VALUE[,VAR=VALUE...]]... [--compare LABEL:DIR]...
#                              [--only-hosts] [--json]
# Extra environment (FI_PROVIDER, BGL_OFI_*, FI_TCP_*) applies to every run; each --variant adds an
# ofi/2hosts run with its own variables (e.g. --variant spin:BGL_SPIN=2000), interleaved with the
# rest; each --compare adds an ofi/2hosts run with another build's bglrun and pl_transport (e.g.
# --compare before:../main/build); --only-hosts leaves out shm/1host and ofi/1host.
set -euo pipefail
build=build; rounds=5; iterations=2000; stream=20000; json=0; only_hosts=0; variants=(); compares=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --iterations) iterations=$2; shift 2 ;;
    --stream) stream=$2; shift 2 ;;
    --json) json=1; shift ;;
    --only-hosts) only_hosts=1; shift ;;
    --compare)
      [[ $2 == *:* && -x ${2#*:}/bin/bglrun && -x ${2#*:}/bin/pl_transport ]] ||
        { echo "transport_compare.sh: --compare LABEL:DIR with DIR/bin/bglrun and DIR/bin/pl_transport, not '$2'" >&2; exit 2; }
      compares+=("$2"); shift 2 ;;
    --variant)
      [[ $2 == *:*=* ]] || { echo "transport_compare.sh: --variant LABEL:VAR=VALUE[,...], not '$2'" >&2; exit 2; }
      variants+=("$2"); shift 2 ;;
    *) echo "transport_compare.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
bin=$build/bin
provider=${FI_PROVIDER:-tcp;ofi_rxm}
for tool in jq fi_pingpong mpiexec.hydra; do
  command -v $tool >/dev/null || { echo "transport_compare.sh: needs $tool" >&2; exit 2; }
done
for b in bglrun pl_transport ofi_msg_bw; do
  [ -x "$bin/$b" ] || { echo "transport_compare.sh: needs $bin/$b (ninja -C $build $b)" >&2; exit 2; }
done
samples=$(mktemp); trap 'rm -f "$samples"' EXIT
pl_env=()  # a variant's variables

pl() {  # label, then bglrun arguments
  local label=$1; shift
  local b=${pl_bin:-$bin}
  env "${pl_env[@]}" "$b/bglrun" -np 2 --shape 2x1x1 "$@" --timeout 600 "$b/pl_transport" \
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

msg_bw() {  # libfabric streaming floor: 256-byte messages (one packet's size), window 64
  local out
  out=$(timeout 300 "$bin/ofi_msg_bw" --size 256 --iterations $((stream / 64 + 1)) --json)
  jq -c '{config: "ofi_msg_bw", stream_MBps: .MBps}' <<< "$out" >> "$samples"
}

for ((r = 0; r < rounds; r++)); do
  if [ $only_hosts = 0 ]; then
    BGL_TRANSPORT=shm pl shm/1host
    BGL_TRANSPORT=ofi pl ofi/1host
  fi
  pl ofi/2hosts --hosts 2
  for v in "${variants[@]}"; do
    IFS=, read -ra vars <<< "${v#*:}"
    pl_env=("${vars[@]}")
    pl "ofi/2hosts/${v%%:*}" --hosts 2
    pl_env=()
  done
  for c in "${compares[@]}"; do
    pl_bin=${c#*:}/bin pl "ofi/2hosts/${c%%:*}" --hosts 2
  done
  fi_pp
  msg_bw
done

summary=$(jq -s --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" --arg provider "$provider" '
  def med: map(select(. != null)) | if length == 0 then null else sort | .[(length / 2 | floor)] end;
  def lo: map(select(. != null)) | min;
  def hi: map(select(. != null)) | max;
  def ratio(a; b): if a == null or b == null then null else a / b end;
  group_by(.config) | map({config: .[0].config,
      lat32_min_ns: (map(.lat32_ns) | lo), lat32_median_ns: (map(.lat32_ns) | med),
      lat256_min_ns: (map(.lat256_ns) | lo), lat256_median_ns: (map(.lat256_ns) | med),
      MBps_max: (map(.stream_MBps) | hi), MBps_median: (map(.stream_MBps) | med),
      samples: length}) as $rows
  | ($rows | map(select(.config == "fi_pingpong"))[0]) as $fi
  | ($rows | map(select(.config == "ofi_msg_bw"))[0]) as $bw
  | {provider: $provider, loadavg: $load,
     rows: ($rows | map(. + {lat256_vs_fi_median: ratio(.lat256_median_ns; $fi.lat256_median_ns),
                              lat32_vs_fi_median: ratio(.lat32_median_ns; $fi.lat32_median_ns),
                              MBps_vs_bw_median: ratio(.MBps_median; $bw.MBps_median)}))}' "$samples")
if [ $json = 1 ]; then
  echo "$summary"
else
  echo "$summary" | jq -r '"# packet latency (half round trip, ns) and 256-byte packet streaming (MB/s; fi_pingpong: its ping-pong throughput; ofi_msg_bw: 256-byte messages, window 64), provider \(.provider), load average \(.loadavg); ratios of medians: lat/fi = to fi_pingpong, MBps/bw = to ofi_msg_bw"'
  echo "$summary" | jq -r 'def n(x): if x == null then "-" else x end;
    def f(x): if x == null then "-" else (x|floor) end; def c(x): if x == null then "-" else (x*100|floor/100) end;
    (["config","lat32_min_ns","lat32_med_ns","lat256_min_ns","lat256_med_ns","MBps_max","MBps_med","lat32/fi","lat256/fi","MBps/bw"] | @tsv),
    (.rows[] | [.config, f(.lat32_min_ns), f(.lat32_median_ns), f(.lat256_min_ns),
                f(.lat256_median_ns), c(.MBps_max), c(.MBps_median),
                c(.lat32_vs_fi_median), c(.lat256_vs_fi_median), c(.MBps_vs_bw_median)] | @tsv)' |
    column -t
fi
