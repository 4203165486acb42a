// firedrill report: draws the charts from the page's JSON blob with uPlot,
// one plot per chart, all on one time axis (seconds since the run's start)
// with a synced cursor and zoom, event and finding bands on every chart.
// When done it writes a self-test into <pre id="selftest"> that the Go
// test reads through a headless browser.
(function () {
  "use strict";

  var started = Date.now();
  var problems = window.__fdProblems || [];
  var origError = console.error;
  console.error = function () {
    problems.push("console.error: " + Array.prototype.map.call(arguments, String).join(" "));
    return origError.apply(console, arguments);
  };

  var SYNC_KEY = "firedrill";
  var D = JSON.parse(document.getElementById("report-data").textContent);
  var DUR = D.duration > 0 ? D.duration : 1;

  // Columns without gaps become typed arrays; gaps (null) keep a plain
  // array, as uPlot reads null as a gap.
  function toSeries(a) {
    for (var i = 0; i < a.length; i++) if (a[i] === null) return a;
    return Float64Array.from(a);
  }
  var XS = D.xs.map(function (a) { return Float64Array.from(a); });
  var COLS = D.cols.map(toSeries);
  var timing = { data: Date.now() - started };

  var SEV = {
    critical: { line: "#b71c1c", fill: "rgba(198,40,40,0.05)", bar: "rgba(198,40,40,0.55)" },
    warning: { line: "#9a5200", fill: "rgba(217,122,0,0.05)", bar: "rgba(217,122,0,0.55)" },
    info: { line: "#1f5f9c", fill: "rgba(31,111,180,0.04)", bar: "rgba(31,111,180,0.5)" }
  };
  function sev(s) { return SEV[s] || SEV.info; }

  // ---- formatting -------------------------------------------------------

  function pad2(n) { return n < 10 ? "0" + n : "" + n; }
  function clock(s) {
    if (s == null || !isFinite(s)) return "—";
    var neg = s < 0; if (neg) s = -s;
    var whole = Math.floor(s), frac = s - whole, out;
    if (whole >= 3600) out = Math.floor(whole / 3600) + ":" + pad2(Math.floor(whole / 60) % 60) + ":" + pad2(whole % 60);
    else out = Math.floor(whole / 60) + ":" + pad2(whole % 60);
    if (frac >= 0.05 && frac <= 0.95) out += "." + Math.round(frac * 10);
    return (neg ? "-" : "") + out;
  }
  function trim(v, d) {
    var s = v.toFixed(d);
    if (s.indexOf(".") >= 0) s = s.replace(/0+$/, "").replace(/\.$/, "");
    return s;
  }
  function sig3(v) {
    var a = Math.abs(v);
    if (a === 0) return "0";
    if (a >= 100) return group(Math.round(v));
    if (a >= 10) return trim(v, 1);
    if (a >= 1) return trim(v, 2);
    return trim(v, 3);
  }
  function group(n) { return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, "\u202f"); }
  function si(v) {
    var a = Math.abs(v);
    if (a >= 1e12) return trim(v / 1e12, 1) + "T";
    if (a >= 1e9) return trim(v / 1e9, 1) + "G";
    if (a >= 1e6) return trim(v / 1e6, 1) + "M";
    if (a >= 1e3) return trim(v / 1e3, 1) + "k";
    return sig3(v);
  }
  // bytes uses decimal units (MB = 10^6), as iostat and the axes do.
  function bytes(v) {
    var a = Math.abs(v), u = ["B", "kB", "MB", "GB", "TB"], i = 0;
    while (a >= 1000 && i < u.length - 1) { a /= 1000; v /= 1000; i++; }
    return (a >= 100 || i === 0 ? Math.round(v) : trim(v, 1)) + " " + u[i];
  }
  function msText(v) { return v >= 1000 ? sig3(v / 1000) + " s" : sig3(v) + " ms"; }

  // value formats a number for the legend, tick for an axis label.
  function value(unit, v) {
    if (v == null || !isFinite(v)) return "—";
    switch (unit) {
      case "ms": return msText(v);
      case "pct": return (v >= 0.9995 && v < 1 ? trim(v * 100, 2) : trim(v * 100, 1)) + "%";
      case "pct100": return trim(v, 1) + "%";
      case "bytes": return bytes(v);
      case "bytesps": return bytes(v) + "/s";
      case "count": return group(Math.round(v));
      case "aas": case "cores": return trim(v, 2);
      default: return sig3(v);
    }
  }
  function tickDecimals(incr) { return Math.max(0, Math.min(6, -Math.floor(Math.log10(incr) + 1e-9))); }
  function tick(unit, v, incr) {
    if (v == null) return "";
    switch (unit) {
      case "ms": return v >= 1000 ? trim(v / 1000, tickDecimals(incr / 1000)) + " s" : trim(v, tickDecimals(incr)) + "";
      case "pct": return trim(v * 100, tickDecimals(incr * 100)) + "%";
      case "pct100": return trim(v, tickDecimals(incr)) + "%";
      case "bytes": case "bytesps": return v === 0 ? "0" : si(v) + "B";
      case "aas": case "cores": return trim(v, tickDecimals(incr));
      default: return Math.abs(v) >= 1e4 ? si(v) : trim(v, tickDecimals(incr));
    }
  }

  // ---- data -------------------------------------------------------------

  // tableOf aligns a chart's series on one time axis: as stored when they
  // share one (the common case), else joined (uPlot leaves the missing
  // points undefined, which lines step over).
  function tableOf(spec) {
    var first = spec.series[0].x, same = true;
    spec.series.forEach(function (s) { if (s.x !== first) same = false; });
    if (same) return [XS[first]].concat(spec.series.map(function (s) { return COLS[s.col]; }));
    var order = [], groups = {};
    spec.series.forEach(function (s, i) {
      if (!groups[s.x]) { groups[s.x] = []; order.push(s.x); }
      groups[s.x].push(i);
    });
    var joined = uPlot.join(order.map(function (x) {
      return [XS[x]].concat(groups[x].map(function (i) { return COLS[spec.series[i].col]; }));
    }));
    var out = [joined[0]], k = 1;
    order.forEach(function (x) { groups[x].forEach(function (i) { out[i + 1] = joined[k++]; }); });
    return out;
  }

  // stack turns the stacked series into running sums, bottom first,
  // skipping hidden ones; a gap (null) stays a gap.
  function stack(spec, raw, shown) {
    var data = raw.slice(), n = raw[0].length, acc = new Float64Array(n), bands = [], below = -1;
    spec.series.forEach(function (s, i) {
      if (!s.stack || !shown[i]) return;
      var src = raw[i + 1], out = src instanceof Float64Array ? new Float64Array(n) : new Array(n);
      for (var j = 0; j < n; j++) {
        var v = src[j];
        if (v == null) { out[j] = v; continue; }
        acc[j] += v;
        out[j] = acc[j];
      }
      data[i + 1] = out;
      if (below >= 0) bands.push({ series: [i + 1, below + 1] });
      below = i;
    });
    return { data: data, bands: bands };
  }

  // isolatedPoints lists the indices of values between two gaps; null
  // when there are none (uPlot then draws no points).
  function isolatedPoints(col) {
    if (!Array.isArray(col)) return null; // typed: no gaps
    var out = [], n = col.length;
    for (var i = 0; i < n; i++) {
      if (col[i] != null && (i === 0 || col[i - 1] === null) && (i === n - 1 || col[i + 1] === null)) out.push(i);
    }
    return out.length ? out : null;
  }

  function logSafe(col) {
    var out = new Array(col.length);
    for (var i = 0; i < col.length; i++) out[i] = col[i] != null && col[i] > 0 ? col[i] : null;
    return out;
  }

  // ---- bands ------------------------------------------------------------

  function xPos(u, t) { return u.valToPos(t, "x", true); }

  // lanes gives each finding a lane of the bar strip at the bottom of
  // every plot, so overlapping windows stay apart (at most 4 lanes).
  var BY_START = D.findings.map(function (f, i) { return i; })
    .sort(function (a, b) { return D.findings[a].t0 - D.findings[b].t0 || a - b; });
  var LANES = (function () {
    var ends = [], lanes = [];
    BY_START.forEach(function (i) {
      var f = D.findings[i], t1 = Math.max(f.t1, f.t0), lane = 0;
      while (lane < ends.length && ends[lane] >= f.t0 && lane < 3) lane++;
      ends[lane] = Math.max(ends[lane] || -Infinity, t1 + 0.001);
      lanes[i] = lane;
    });
    return lanes;
  })();
  var NLANES = LANES.length ? Math.max.apply(null, LANES) + 1 : 0;
  var LANE_PX = 5;

  function drawBands(u) {
    var ctx = u.ctx, b = u.bbox, pr = uPlot.pxRatio, bottom = b.top + b.height;
    ctx.save();
    ctx.beginPath();
    ctx.rect(b.left, b.top, b.width, b.height);
    ctx.clip();
    D.events.forEach(function (e) {
      var t1 = e.t1 < 0 ? DUR : e.t1, x0 = xPos(u, e.t0), x1 = xPos(u, t1);
      var outage = e.kind === "outage";
      if (x1 - x0 >= 1) {
        ctx.fillStyle = outage ? "rgba(198,40,40,0.16)" : e.error ? "rgba(198,40,40,0.08)" : "rgba(90,100,120,0.10)";
        ctx.fillRect(x0, b.top, x1 - x0, b.height);
      }
      ctx.strokeStyle = e.error ? "rgba(160,24,24,0.8)" : "rgba(70,78,92,0.7)";
      ctx.lineWidth = pr;
      ctx.setLineDash([4 * pr, 3 * pr]);
      ctx.beginPath();
      ctx.moveTo(Math.round(x0) + 0.5, b.top); ctx.lineTo(Math.round(x0) + 0.5, bottom);
      if (x1 - x0 >= 1) { ctx.moveTo(Math.round(x1) + 0.5, b.top); ctx.lineTo(Math.round(x1) + 0.5, bottom); }
      ctx.stroke();
    });
    D.findings.forEach(function (f, i) {
      var c = sev(f.severity), x0 = xPos(u, f.t0), x1 = f.t1 > f.t0 ? xPos(u, f.t1) : x0, w = Math.max(x1 - x0, 2 * pr);
      // An info finding (advice, often about the whole run) gets its bar
      // only: tinting every chart for it would hide the windows that matter.
      if (f.severity !== "info") {
        ctx.fillStyle = c.fill;
        ctx.fillRect(x0, b.top, w, b.height);
      }
      ctx.fillStyle = c.bar;
      ctx.fillRect(x0, bottom - (LANES[i] + 1) * LANE_PX * pr, w, (LANE_PX - 1) * pr);
    });
    ctx.restore();
  }

  // drawLabels names the events at the top of each band and numbers the
  // findings above their bars (F1 is the strip's first), on top of the
  // series.
  function drawLabels(u) {
    var ctx = u.ctx, b = u.bbox, pr = uPlot.pxRatio, top = [], low = [];
    ctx.save();
    ctx.beginPath();
    ctx.rect(b.left, b.top, b.width, b.height);
    ctx.clip();
    ctx.font = (11 * pr) + "px system-ui, -apple-system, 'Segoe UI', Roboto, 'Liberation Sans', 'DejaVu Sans', sans-serif";
    ctx.textBaseline = "top";
    // place finds the first of up to 3 rows where a label fits.
    function place(rows, x, w) {
      for (var r = 0; r < 3; r++) {
        if (rows[r] == null || rows[r] < x) { rows[r] = x + w + 6 * pr; return r; }
      }
      return -1;
    }
    function label(text, x, y, color) {
      var w = ctx.measureText(text).width;
      ctx.fillStyle = "rgba(255,255,255,0.85)";
      ctx.fillRect(x - 2 * pr, y - pr, w + 4 * pr, 13 * pr);
      ctx.fillStyle = color;
      ctx.fillText(text, x, y);
    }
    D.events.forEach(function (e) {
      var x = Math.max(xPos(u, e.t0), b.left) + 4 * pr;
      if (x > b.left + b.width) return;
      var outage = e.kind === "outage";
      var text = e.name + (outage ? " (no connection)" : e.error ? " (failed)" : ""), r = place(top, x, ctx.measureText(text).width);
      if (r >= 0) label(text, x, b.top + (3 + r * 14) * pr, outage || e.error ? "#a01818" : "#2c3340");
    });
    var above = b.top + b.height - (NLANES * LANE_PX + 15) * pr;
    BY_START.forEach(function (i) {
      var f = D.findings[i], x = Math.max(xPos(u, f.t0), b.left) + 3 * pr;
      if (x > b.left + b.width) return;
      var text = "F" + (i + 1), r = place(low, x, ctx.measureText(text).width);
      if (r >= 0) label(text, x, above - r * 14 * pr, sev(f.severity).line);
    });
    ctx.restore();
  }

  // ---- charts -----------------------------------------------------------

  var charts = [];      // {spec, el, u, log}
  var zoom = null;      // {min, max} shared by every chart, null = whole run
  var resetBtn = document.getElementById("zoom-reset");

  function xRange() { return zoom ? [zoom.min, zoom.max] : [0, DUR]; }

  function zoomTo(min, max) {
    if (!(max > min)) return;
    if (zoom && zoom.min === min && zoom.max === max) return;
    zoom = { min: min, max: max };
    charts.forEach(function (c) { c.u.setScale("x", { min: min, max: max }); });
    if (resetBtn) resetBtn.hidden = false;
  }
  function zoomOut() {
    if (!zoom) return;
    zoom = null;
    charts.forEach(function (c) { c.u.setScale("x", { min: 0, max: DUR }); });
    if (resetBtn) resetBtn.hidden = true;
  }

  function yRange(ax, log) {
    return function (u, min, max) {
      if (min == null || !isFinite(min) || !isFinite(max)) {
        min = ax.min != null ? ax.min : 0;
        max = ax.max != null ? ax.max : 1;
      }
      if (log) {
        min = Math.max(min, 1e-3); max = Math.max(max, min * 10);
        return uPlot.rangeLog(min, max, 10, true);
      }
      if (ax.min != null && min >= ax.min) min = ax.min;
      if (ax.headroom > 1) max = min + (max - min) * ax.headroom;
      if (max <= min) max = min + (ax.max != null && ax.max > min ? (ax.max - min) : 1);
      var r = uPlot.rangeNum(min, max, 0.08, true);
      if (ax.min != null && min >= ax.min && r[0] < ax.min) r[0] = ax.min;
      if (ax.max != null && max <= ax.max && r[1] > ax.max) r[1] = ax.max;
      return r;
    };
  }

  var axisFont = "12px system-ui, -apple-system, 'Segoe UI', Roboto, 'Liberation Sans', 'DejaVu Sans', sans-serif";
  var labelFont = "600 12px system-ui, -apple-system, 'Segoe UI', Roboto, 'Liberation Sans', 'DejaVu Sans', sans-serif";
  var AXIS_W = 64;
  var TIME_INCRS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];

  function dashOf(style) { return style === "dash" ? [6, 4] : style === "dot" ? [2, 3] : undefined; }

  function alpha(hex, a) {
    var n = parseInt(hex.slice(1), 16);
    return "rgba(" + (n >> 16 & 255) + "," + (n >> 8 & 255) + "," + (n & 255) + "," + a + ")";
  }

  function heightOf(spec) { return spec.id === "throughput" || spec.id === "aas" ? 230 : 180; }

  function makeChart(c) {
    var spec = c.spec, log = c.log, raw = tableOf(spec);
    if (log) raw = raw.map(function (col, i) { return i === 0 ? col : logSafe(col); });
    c.raw = raw;
    var shown = spec.series.map(function (s) { return !s.hidden; });
    var stacked = spec.series.some(function (s) { return s.stack; });
    var st = stacked ? stack(spec, raw, shown) : { data: raw, bands: [] };
    var units = spec.axes.map(function (a) { return a.unit; });
    var scaleKey = ["y", "y2"];

    var series = [{
      label: "time",
      value: function (u, v) { return clock(v); }
    }];
    spec.series.forEach(function (s, i) {
      var unit = units[s.axis || 0];
      series.push({
        label: s.label,
        scale: scaleKey[s.axis || 0],
        stroke: s.alpha ? alpha(s.color, s.alpha) : s.color,
        width: s.width || (s.stack ? 1 : 1.25),
        dash: dashOf(s.style),
        fill: s.stack ? alpha(s.color, 0.55) : undefined,
        show: !s.hidden,
        spanGaps: false,
        // Lines are drawn without points (fast), so a value with gaps on
        // both sides (a rare SLRU read) would be invisible: dot those.
        points: { show: false, size: 4, fill: s.color, filter: isolatedPoints(raw[i + 1]) },
        value: function (u, v, si, idx) {
          // Stacked series show their own value, not the running sum.
          var own = idx == null ? null : c.raw[si][idx];
          return value(unit, own);
        }
      });
    });

    var scales = { x: { time: false, range: xRange } };
    spec.axes.forEach(function (a, i) {
      scales[scaleKey[i]] = { range: yRange(a, log && i === 0), distr: log && i === 0 ? 3 : 1 };
    });

    var axes = [{
      font: axisFont,
      stroke: "#444",
      grid: { stroke: "#eceef1", width: 1 },
      ticks: { stroke: "#cfd3d8", width: 1, size: 4 },
      incrs: TIME_INCRS,
      values: function (u, splits) { return splits.map(clock); }
    }];
    spec.axes.forEach(function (a, i) {
      axes.push({
        scale: scaleKey[i],
        side: i === 0 ? 3 : 1,
        label: a.label,
        labelFont: labelFont,
        labelSize: 16,
        labelGap: 0,
        font: axisFont,
        size: AXIS_W,
        gap: 4,
        stroke: "#444",
        grid: { show: i === 0, stroke: "#eceef1", width: 1 },
        ticks: { stroke: "#cfd3d8", width: 1, size: 3 },
        values: function (u, splits, ai, space, incr) {
          return splits.map(function (v) { return tick(a.unit, v, incr); });
        }
      });
    });
    if (spec.axes.length < 2) {
      // An empty right axis keeps every plot the same width, so one time
      // is at one x on every chart.
      axes.push({ scale: "y", side: 1, size: AXIS_W, label: "", labelSize: 16, values: function () { return []; }, grid: { show: false }, ticks: { show: false }, stroke: "transparent" });
    }

    var opts = {
      width: Math.max(c.el.clientWidth, 300),
      height: heightOf(spec),
      pxAlign: 0,
      legend: { live: true },
      cursor: {
        sync: { key: SYNC_KEY, setSeries: false, scales: ["x", null] },
        drag: { x: true, y: false, setScale: false },
        points: { size: 5 },
        bind: {
          dblclick: function (u, targ, handler) {
            return function (e) { zoom = null; if (resetBtn) resetBtn.hidden = true; return handler(e); };
          }
        }
      },
      focus: { alpha: 0.35 },
      scales: scales,
      axes: axes,
      series: series,
      bands: st.bands,
      hooks: {
        drawClear: [function (u) { c.drawStart = performance.now(); drawBands(u); }],
        draw: [drawLabels, function () { if (c.drawMs == null) c.drawMs = Math.round(performance.now() - c.drawStart); }],
        setSelect: [function (u) {
          if (u.select.width < 3) return;
          var min = u.posToVal(u.select.left, "x"), max = u.posToVal(u.select.left + u.select.width, "x");
          u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
          zoomTo(min, max);
        }],
        setSeries: stacked ? [function (u, si) {
          if (si == null) return;
          var again = stack(spec, c.raw, u.series.slice(1).map(function (s) { return s.show; }));
          while (u.bands.length) u.delBand(0);
          again.bands.forEach(function (b) { u.addBand(b); });
          u.setData(again.data);
        }] : []
      }
    };
    c.el.textContent = "";
    c.u = new uPlot(opts, st.data, c.el);
    c.points = raw[0].length;
  }

  // ---- page -------------------------------------------------------------

  var byId = {};
  D.charts.forEach(function (spec) {
    byId[spec.id] = spec;
    if (spec.nodata || !spec.series || !spec.series.length) return;
    var el = document.querySelector('.plot[data-chart="' + spec.id + '"]');
    if (!el) { problems.push("chart " + spec.id + ": no placeholder"); return; }
    var c = { spec: spec, el: el, log: false };
    try {
      var t0 = Date.now();
      makeChart(c);
      timing[spec.id] = Date.now() - t0;
      charts.push(c);
    } catch (err) {
      c.error = String(err && err.stack || err);
      problems.push("chart " + spec.id + ": " + c.error);
      el.textContent = "chart failed: " + err;
    }
  });

  Array.prototype.forEach.call(document.querySelectorAll("input[data-log]"), function (box) {
    box.addEventListener("change", function () {
      charts.forEach(function (c) {
        if (c.spec.id !== box.getAttribute("data-log")) return;
        c.u.destroy();
        c.log = box.checked;
        makeChart(c);
      });
    });
  });

  Array.prototype.forEach.call(document.querySelectorAll("button.zoom"), function (btn) {
    btn.addEventListener("click", function () {
      var t0 = parseFloat(btn.getAttribute("data-t0")), t1 = parseFloat(btn.getAttribute("data-t1"));
      var span = Math.max(t1 - t0, 10), margin = Math.max(span * 0.5, 10);
      zoomTo(Math.max(0, t0 - margin), Math.min(DUR, Math.max(t1, t0) + margin));
      document.getElementById("charts").scrollIntoView({ behavior: "smooth" });
    });
  });
  if (resetBtn) resetBtn.addEventListener("click", zoomOut);

  var filter = document.getElementById("settings-filter");
  if (filter) filter.addEventListener("input", function () {
    var q = filter.value.toLowerCase();
    Array.prototype.forEach.call(document.querySelectorAll(".settings-table tr"), function (tr) {
      tr.hidden = q !== "" && tr.textContent.toLowerCase().indexOf(q) < 0;
    });
  });

  var resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () {
      charts.forEach(function (c) { c.u.setSize({ width: Math.max(c.el.clientWidth, 300), height: heightOf(c.spec) }); });
    }, 100);
  });

  // ---- self-test --------------------------------------------------------

  // inked counts the strongly coloured pixels of a plot area: series
  // strokes and fills, not the grey grid, the pale bands or black text.
  function inked(u) {
    var b = u.bbox, img;
    if (b.width <= 0 || b.height <= 0) return 0;
    img = u.ctx.getImageData(b.left, b.top, b.width, b.height).data;
    var n = 0;
    for (var i = 0; i < img.length; i += 4) {
      if (img[i + 3] < 150) continue;
      var r = img[i], g = img[i + 1], bl = img[i + 2];
      if (Math.max(r, g, bl) - Math.min(r, g, bl) >= 50) n++;
    }
    return n;
  }

  function selftest() {
    var result = { charts: [], problems: problems, ms: 0, zoomSync: "", timing: timing };
    timing.beforeSelftest = Date.now() - started;
    D.charts.forEach(function (spec) {
      var row = { id: spec.id, title: spec.title };
      var c = charts.filter(function (c) { return c.spec === spec; })[0];
      if (spec.nodata) { row.state = "nodata"; row.why = spec.nodata; }
      else if (!c) { row.state = "error"; }
      else {
        row.state = "drawn";
        row.series = spec.series.length;
        row.points = c.points;
        row.drawMs = c.drawMs;
        try { row.pixels = inked(c.u); } catch (err) { row.pixels = -1; problems.push("selftest " + spec.id + ": " + err); }
      }
      result.charts.push(row);
    });
    result.ms = Date.now() - started;
    result.cursorSync = check(cursorSync);
    result.stackToggle = check(stackToggle);
    result.logToggle = check(logToggle);
    // Zoom one chart's way and check every chart followed, then zoom out.
    if (charts.length > 0) {
      zoomTo(DUR * 0.25, DUR * 0.5);
      setTimeout(function () {
        var bad = charts.filter(function (c) {
          return Math.abs(c.u.scales.x.min - DUR * 0.25) > 1e-6 || Math.abs(c.u.scales.x.max - DUR * 0.5) > 1e-6;
        });
        zoomOut();
        setTimeout(function () {
          var notBack = charts.filter(function (c) { return c.u.scales.x.min !== 0 || c.u.scales.x.max !== DUR; });
          result.zoomSync = bad.length || notBack.length ? "failed: " + bad.concat(notBack).map(function (c) { return c.spec.id; }).join(",") : "ok";
          write(result);
        }, 0);
      }, 0);
    } else {
      result.zoomSync = "no charts";
      write(result);
    }
  }
  function check(fn) {
    try { return fn(); } catch (err) { problems.push("selftest: " + (err && err.stack || err)); return "threw: " + err; }
  }

  // cursorSync moves the mouse over the first chart and checks every
  // chart's cursor follows to the same time, with legend values.
  function cursorSync() {
    if (charts.length < 2) return "ok";
    var src = charts[0].u, over = src.over, r = over.getBoundingClientRect();
    var at = { clientX: r.left + r.width * 0.6, clientY: r.top + r.height * 0.5, bubbles: true };
    over.dispatchEvent(new MouseEvent("mouseenter", at));
    over.dispatchEvent(new MouseEvent("mousemove", at));
    var t = src.posToVal(src.cursor.left, "x");
    var bad = charts.filter(function (c) {
      return c.u.cursor.idx == null || Math.abs(c.u.posToVal(c.u.cursor.left, "x") - t) > DUR / 500;
    }).map(function (c) { return c.spec.id; });
    over.dispatchEvent(new MouseEvent("mouseleave", at));
    return bad.length ? "failed: " + bad.join(",") : "ok";
  }

  // stackToggle hides and shows a stacked series, which restacks.
  function stackToggle() {
    var c = charts.filter(function (c) { return c.spec.series.some(function (s) { return s.stack; }); })[0];
    if (!c) return "ok";
    c.u.setSeries(1, { show: false });
    c.u.setSeries(1, { show: true });
    return "ok";
  }

  // logToggle switches the latency chart to a log scale and back.
  function logToggle() {
    var box = document.querySelector("input[data-log]");
    if (!box) return "ok";
    var id = box.getAttribute("data-log");
    var c = charts.filter(function (c) { return c.spec.id === id; })[0];
    if (!c) return "ok";
    box.checked = true;
    box.dispatchEvent(new Event("change"));
    var ok = c.log && c.u.scales.y.distr === 3;
    box.checked = false;
    box.dispatchEvent(new Event("change"));
    return ok && !c.log ? "ok" : "failed: the scale did not switch";
  }

  function write(result) {
    var pre = document.getElementById("selftest");
    pre.textContent = JSON.stringify(result, null, 1);
    document.body.setAttribute("data-selftest", "done");
  }
  timing.scriptEnd = Date.now() - started;
  setTimeout(selftest, 0);

  window.firedrillReport = { zoomTo: zoomTo, zoomOut: zoomOut, charts: charts };
})();
