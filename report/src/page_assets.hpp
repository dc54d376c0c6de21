#pragma once
// The page's inline style and scripts (the page fetches nothing).
#include <string_view>

namespace bgl::report {

// First in <head>: counts uncaught script errors on the root element (data-errors), so that a test
// (or a reader's devtools) sees them.
inline constexpr std::string_view kErrorTrap = R"js(
window.addEventListener('error', function (e) {
  var d = document.documentElement;
  d.setAttribute('data-errors', String((+d.getAttribute('data-errors') || 0) + 1));
  d.setAttribute('data-last-error', String(e.message));
});
)js";

inline constexpr std::string_view kStyle = R"css(
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #222; background: #fff; }
header { background: #1f3b57; color: #fff; padding: 10px 20px; }
header h1 { margin: 0; font-size: 20px; }
header .source { margin: 2px 0 6px; opacity: .8; font-size: 12px; }
nav a { color: #cfe3f5; margin-right: 14px; text-decoration: none; }
main { padding: 0 20px 40px; max-width: 1400px; }
section { margin-top: 18px; }
h2 { font-size: 17px; border-bottom: 1px solid #ccc; padding-bottom: 3px; }
h3 { font-size: 14px; margin: 12px 0 2px; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: 2px 18px; }
dl.facts dt { color: #555; } dl.facts dd { margin: 0; }
table.data { border-collapse: collapse; font-variant-numeric: tabular-nums; font-size: 13px; }
table.data th, table.data td { padding: 2px 9px; border-bottom: 1px solid #e4e4e4; }
table.data th { background: #f2f2f2; text-align: left; cursor: pointer; position: sticky; top: 0; }
table.data td + td { text-align: right; }
.scroll { overflow: auto; max-width: 100%; }
.scroll.tall { max-height: 520px; border: 1px solid #e4e4e4; }
.warn { color: #b00; }
svg text { font-size: 11px; fill: #333; }
svg .plane { font-size: 12px; font-weight: 600; }
svg .rank { font-size: 9px; text-anchor: middle; }
#torus line { stroke-width: 2.6; stroke-linecap: round; }
#torus rect.node { fill: #fff; stroke: #1f3b57; stroke-width: 1.2; }
#torus rect.node.idle { stroke: #aaa; stroke-dasharray: 2 2; }
#torus rect.task { fill: #eef4fa; }
.chart .bar { fill: #3d7ab8; }
.chart .computing, .key.computing { fill: #59a14f; background: #59a14f; }
.chart .software, .key.software { fill: #4e79a7; background: #4e79a7; }
.chart .waiting, .key.waiting { fill: #e15759; background: #e15759; }
.chart .axis { stroke: #888; }
.key { display: inline-block; width: 10px; height: 10px; margin-left: 8px; }
.legend .scale { display: inline-block; width: 120px; height: 10px; vertical-align: middle;
  background: linear-gradient(to right, #ffeda0, #feb24c, #f03b20, #800026); }
)css";

// Last in <body>: sortable tables, the torus's colour switch; marks the page ready.
inline constexpr std::string_view kScript = R"js(
(function () {
  var units = { ns: 1e-9, us: 1e-6, ms: 1e-3, s: 1, B: 1, KiB: 1024, MiB: 1048576,
                GiB: 1073741824, TiB: 1099511627776, '%': 0.01 };
  function value(cell) {
    var t = cell.textContent.trim();
    var m = /^(-?[0-9][0-9,]*(?:\.[0-9]+)?)\s*([a-zA-Z%]*)/.exec(t);
    if (!m) return null;
    var v = parseFloat(m[1].replace(/,/g, ''));
    return m[2] in units ? v * units[m[2]] : v;
  }
  document.querySelectorAll('table.sortable').forEach(function (table) {
    table.querySelectorAll('th').forEach(function (th, column) {
      th.addEventListener('click', function () {
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var down = th.getAttribute('data-order') !== 'down';
        rows.sort(function (a, b) {
          var x = a.cells[column], y = b.cells[column];
          if (!x || !y) return 0;
          var vx = value(x), vy = value(y);
          var r = (vx !== null && vy !== null) ? vx - vy
                : x.textContent.localeCompare(y.textContent);
          return down ? -r : r;
        });
        th.setAttribute('data-order', down ? 'down' : 'up');
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  var metric = document.getElementById('torus-metric');
  if (metric) {
    metric.addEventListener('change', function () {
      var key = metric.value;
      document.querySelectorAll('#torus line').forEach(function (l) {
        l.setAttribute('stroke', l.getAttribute('data-' + key));
      });
      var top = document.getElementById('torus-top');
      top.textContent = top.getAttribute('data-' + key);
    });
  }
  document.body.setAttribute('data-ready', '1');
})();
)js";

}  // namespace bgl::report
