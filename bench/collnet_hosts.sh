#!/usr/bin/env bash
# The collective network on one host against the same job split over two emulated hosts on
# loopback (libfabric between the hosts' agents), interleaved run by run so that machine noise hits
# both alike: collnet_bench's collective-network columns (u64 allreduce, broadcast, double sum in
# MB/s; global-interrupt barrier in us) per configuration, min/max and median over the rounds, and
# the two-host/one-host ratio of the medians. --json for JSON.
#   bench/collnet_hosts.sh [--build DIR] [--rounds R] [--np N --shape S] [--max-bytes B]
#                          [--barriers N] [--compare LABEL:DIR] [--json]
# --compare adds, interleaved, the two-host run of another build (e.g. before:../main/build), with
# its median and its ratio to this build's one host.
# Extra environment (FI_PROVIDER, BGL_OFI_*, BGL_TREE*) applies to every run.
set -euo pipefail
build=build; rounds=5; np=8; shape=2x2x2; max_bytes=1048576; barriers=200; json=0; compare=
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --shape) shape=$2; shift 2 ;;
    --max-bytes) max_bytes=$2; shift 2 ;;
    --barriers) barriers=$2; shift 2 ;;
    --json) json=1; shift ;;
    --compare)
      [[ $2 == *:* && -x ${2#*:}/bin/bglrun && -x ${2#*:}/bin/collnet_bench ]] ||
        { echo "collnet_hosts.sh: --compare LABEL:DIR with DIR/bin/bglrun and DIR/bin/collnet_bench, not '$2'" >&2; exit 2; }
      compare=$2; shift 2 ;;
    *) echo "collnet_hosts.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
bin=$build/bin
for tool in jq mpiexec.hydra; do
  command -v $tool >/dev/null || { echo "collnet_hosts.sh: needs $tool" >&2; exit 2; }
done
samples=$(mktemp); trap 'rm -f "$samples"' EXIT

run() {  # label, then extra bglrun arguments
  local label=$1; shift
  local b=${run_bin:-$bin}
  "$b/bglrun" -np "$np" --shape "$shape" "$@" --timeout 900 "$b/collnet_bench" --rounds 1 \
    --max-bytes "$max_bytes" --barriers "$barriers" --json 2>/dev/null |
    jq -c --arg l "$label" '.tables[] | .title as $t | .rows[] |
      if has("bytes") then {config: $l, table: $t, row: (.bytes | tostring), value: .["collnet MB/s"]}
      elif .variant == "global interrupt" then
        {config: $l, table: "barrier (us, last in to last out)", row: "median", value: .median},
        {config: $l, table: "barrier period (us)", row: "back to back", value: .period}
      else empty end' >> "$samples"
}

for ((r = 0; r < rounds; r++)); do
  run 1host
  run 2hosts --hosts 2
  if [ -n "$compare" ]; then run_bin=${compare#*:}/bin run compare --hosts 2; fi
done

summary=$(jq -s --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" --arg np "$np" --arg shape "$shape" '
  def med: sort | .[(length / 2 | floor)];
  group_by([.table, .row]) | sort_by([.[0].table, (.[0].row | tonumber? // 0)]) | map(
    (map(select(.config == "1host") | .value)) as $one |
    (map(select(.config == "2hosts") | .value)) as $two |
    (map(select(.config == "compare") | .value)) as $cmp |
    {table: .[0].table, row: .[0].row,
     one_min: ($one | min), one_max: ($one | max), one_median: ($one | med),
     two_min: ($two | min), two_max: ($two | max), two_median: ($two | med),
     two_over_one: (($two | med) / ($one | med)), samples: ($one | length)}
    + (if ($cmp | length) > 0 then {compare_median: ($cmp | med),
         compare_over_one: (($cmp | med) / ($one | med))} else {} end)) as $rows
  | {tasks: $np, shape: $shape, loadavg: $load, compare: $compare, rows: $rows}' \
  --arg compare "${compare%%:*}" "$samples")
if [ $json = 1 ]; then
  echo "$summary"
else
  echo "$summary" | jq -r '"# collective network, \(.tasks) tasks on \(.shape): one host vs two emulated hosts on loopback, interleaved; load average \(.loadavg)"'
  echo "$summary" | jq -r 'def c(x): if x == null then "-" else (x*100|floor/100) end;
    (["table","row","1host_min","1host_med","1host_max","2hosts_min","2hosts_med","2hosts_max","2h/1h_med"]
      + (if .compare != "" then ["2hosts_\(.compare)_med", "\(.compare)/1h_med"] else [] end) | @tsv),
    (.compare as $c | .rows[] | [.table, .row, c(.one_min), c(.one_median), c(.one_max), c(.two_min),
                c(.two_median), c(.two_max), c(.two_over_one)]
      + (if $c != "" then [c(.compare_median), c(.compare_over_one)] else [] end) | @tsv)' |
    column -t -s $'\t'
fi
