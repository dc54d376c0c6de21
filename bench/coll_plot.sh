#!/usr/bin/env bash
# Plots coll_bench results: one SVG per (partition, collective) with two panels against the
# message size (log-log): the measured wall time (median, rank 0) of every algorithm, and the cost
# model's busiest-link load. MPICH's default algorithm for each size is drawn as black dots, the
# library's own choice as red circles.
#
#   bench/coll_plot.sh OUTDIR RESULT.json...
#
# RESULT.json: the output of `bglrun ... coll_bench --json` (the line starting with '{' is used;
# comment lines are ignored). Needs gnuplot (apt-get install gnuplot-nox) and jq.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: bench/coll_plot.sh OUTDIR RESULT.json..." >&2
  exit 2
fi
command -v gnuplot > /dev/null || { echo "coll_plot: gnuplot is missing (apt-get install gnuplot-nox)" >&2; exit 1; }
command -v jq > /dev/null || { echo "coll_plot: jq is missing (apt-get install jq)" >&2; exit 1; }
out=$1
shift
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for file in "$@"; do
  [ -r "$file" ] || { echo "coll_plot: cannot read $file" >&2; exit 1; }
  json=$work/result.json
  grep '^{' "$file" | tail -n 1 > "$json"
  [ -s "$json" ] || { echo "coll_plot: $file has no coll_bench --json line" >&2; exit 1; }
  title=$(jq -r '.title' "$json")
  # "collectives on 4x4x4, 64 ranks (...)" -> 4x4x4
  shape=$(sed -n 's/^collectives on \([0-9x]*\),.*/\1/p' <<< "$title")
  [ -n "$shape" ] || { echo "coll_plot: $file: unexpected title '$title'" >&2; exit 1; }
  # Against size: the barrier has none (its one row is in the tables, not in a plot).
  for op in $(jq -r '.rows[] | select(.bytes > 0) | .op' "$json" | sort -u); do
    plots=() links=()
    for alg in $(jq -r --arg op "$op" '.rows[] | select(.op == $op) | .algorithm' "$json" | sort -u); do
      dat=$work/$op.${alg//\//_}.dat
      jq -r --arg op "$op" --arg alg "$alg" \
        '.rows[] | select(.op == $op and .algorithm == $alg) | "\(.bytes) \(.median_us) \(.max_link_B)"' \
        "$json" | sort -n > "$dat"
      plots+=("'$dat' using 1:2 with linespoints title '$alg'")
      links+=("'$dat' using 1:(\$3 > 0 ? \$3 : 1/0) with linespoints title '$alg'")
    done
    mpich=$work/$op.mpich.dat
    jq -r --arg op "$op" '.rows[] | select(.op == $op and (.default // "" | test("mpich"))) | "\(.bytes) \(.median_us)"' \
      "$json" | sort -n > "$mpich"
    [ -s "$mpich" ] && plots+=("'$mpich' using 1:2 with points pt 7 ps 1.2 lc rgb 'black' title 'MPICH default'")
    ours=$work/$op.bgl.dat
    jq -r --arg op "$op" '.rows[] | select(.op == $op and (.default // "" | test("bgl"))) | "\(.bytes) \(.median_us)"' \
      "$json" | sort -n > "$ours"
    [ -s "$ours" ] && plots+=("'$ours' using 1:2 with points pt 6 ps 2 lc rgb 'red' title 'bgl default'")
    svg=$out/coll_${shape}_${op}.svg
    gnuplot <<EOF
set terminal svg size 960,420 dynamic font 'sans,10'
set output '$svg'
set termoption noenhanced
set multiplot layout 1,2 title '$op on $shape (coll_bench)'
set logscale xy
set format x '%.0s%c'
set grid
set key top left font ',8'
set xlabel 'bytes'
set ylabel 'wall time, median (us)'
plot $(IFS=,; echo "${plots[*]}")
set ylabel 'busiest link (bytes, cost model)'
plot $(IFS=,; echo "${links[*]}")
unset multiplot
EOF
    echo "coll_plot: $svg"
  done
done
