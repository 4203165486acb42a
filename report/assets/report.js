// firedrill report: draws the charts from the page's JSON blob with uPlot,
// one plot per chart, all on one time axis (seconds since the run's start)
// with a synced cursor and zoom; events and finding windows in lanes above
// each plot (never over the data), every axis and legend entry with its unit.
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
    critical: { line: "#b71c1c", bar: "rgba(198,40,40,0.32)" },
    warning: { line: "#c06a00", bar: "rgba(217,122,0,0.34)" },
    info: { line: "#1f5f9c", bar: "rgba(31,111,180,0.22)" }
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
      case "s": return v >= 1 || v === 0 ? sig3(v) + " s" : msText(v * 1000);
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
      case "ms": return v >= 1000 ? trim(v / 1000, tickDecimals(incr / 1000)) + " s" : trim(v, tickDecimals(incr)) + " ms";
      case "s": return trim(v, tickDecimals(incr)) + " s";
      case "pct": return trim(v * 100, tickDecimals(incr * 100)) + "%";
      case "pct100": return trim(v, tickDecimals(incr)) + "%";
      case "bytes": case "bytesps": return v === 0 ? "0" : si(v) + "B";
      case "aas": case "cores": return trim(v, tickDecimals(incr));
      default: return Math.abs(v) >= 1e4 ? si(v) : trim(v, tickDecimals(incr));
    }
  }

  // The unit a reader reads, for axes that do not name their own (the
  // report's axes all do; this keeps older callers' pages labelled).
  var UNIT_TEXT = { rate: "/s", ms: "ms", s: "s", pct: "%", pct100: "%", bytes: "bytes", bytesps: "bytes/s", cores: "cores", aas: "sessions" };
  function unitText(ax) { return ax.text || UNIT_TEXT[ax.unit] || ""; }
  // withUnit appends the unit to a name unless the name already says it
  // (as a word: "s" in "longest wait" is no unit).
  function saysUnit(name, text) {
    for (var i = name.indexOf(text); i >= 0; i = name.indexOf(text, i + 1)) {
      var before = i === 0 ? " " : name.charAt(i - 1), after = name.charAt(i + text.length) || " ";
      if (/[\s(]/.test(before) && /[\s),]/.test(after)) return true;
    }
    return false;
  }
  function withUnit(name, text) {
    if (!text || saysUnit(name, text)) return name;
    if (/\/s$/.test(text) && /\/s\b/.test(name)) return name;
    return name + " (" + text + ")";
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

  // ---- lanes ------------------------------------------------------------

  function xPos(u, t) { return u.valToPos(t, "x", true); }

  // Above every plot, in its top padding (outside the plot area, so no
  // window ever covers a line): a lane of events, then one lane per
  // overlapping finding (at most 4), each window a bar named F1… as in
  // the list at the top. Inside the plot only thin grey lines mark where
  // events start and end.
  var BY_START = D.findings.map(function (f, i) { return i; })
    .sort(function (a, b) { return D.findings[a].t0 - D.findings[b].t0 || a - b; });
  // Lanes are given most severe first (the findings' order), so the top
  // lane holds the finding the list at the top leads with.
  var LANES = (function () {
    var ends = [], lanes = [];
    D.findings.forEach(function (f0, i) {
      var f = D.findings[i], t1 = Math.max(f.t1, f.t0), lane = 0;
      while (lane < 3 && (ends[lane] || []).some(function (w) { return w[0] <= t1 && f.t0 <= w[1]; })) lane++;
      (ends[lane] = ends[lane] || []).push([f.t0, t1 + 0.001]);
      lanes[i] = lane;
    });
    return lanes;
  })();
  var NLANES = LANES.length ? Math.max.apply(null, LANES) + 1 : 0;
  var LANE_H = 14, EVENT_H = D.events.length ? 15 : 0;
  var PAD_TOP = NLANES || EVENT_H ? EVENT_H + NLANES * LANE_H + 4 : 0;
  var laneFont = "11px system-ui, -apple-system, 'Segoe UI', Roboto, 'Liberation Sans', 'DejaVu Sans', sans-serif";

  // fitText cuts text to maxW pixels, with an ellipsis.
  function fitText(ctx, text, maxW) {
    if (ctx.measureText(text).width <= maxW) return text;
    var lo = 0, hi = text.length;
    while (lo < hi) {
      var mid = (lo + hi + 1) >> 1;
      if (ctx.measureText(text.slice(0, mid) + "…").width <= maxW) lo = mid; else hi = mid - 1;
    }
    return lo > 0 ? text.slice(0, lo) + "…" : "";
  }

  // barLabel writes text in a bar, cut to fit; in the room after a bar
  // too narrow for a few letters.
  function barLabel(ctx, text, x0, x1, y, h, color, right) {
    var pr = uPlot.pxRatio, x = x0 + 3 * pr, room = x1 - x - 2 * pr;
    if (room < 60 * pr && right - x1 > room) { x = x1 + 3 * pr; room = right - x; }
    text = fitText(ctx, text, room);
    if (!text) return;
    ctx.fillStyle = color;
    ctx.fillText(text, x, y + h / 2);
  }

  function drawLanes(u) {
    var ctx = u.ctx, b = u.bbox, pr = uPlot.pxRatio, bottom = b.top + b.height, right = b.left + b.width;
    if (!PAD_TOP) return;
    var laneTop = b.top - PAD_TOP * pr;
    ctx.save();
    ctx.font = (11 * pr) + "px" + laneFont.slice(4);
    ctx.textBaseline = "middle";
    // The lanes' ground, so an empty lane reads as "nothing here".
    ctx.fillStyle = "#f7f8fa";
    ctx.fillRect(b.left, laneTop, b.width, (PAD_TOP - 3) * pr);
    ctx.beginPath();
    ctx.rect(0, 0, u.ctx.canvas.width, b.top);
    ctx.clip();
    D.events.forEach(function (e) {
      var t1 = e.t1 < 0 ? DUR : e.t1, x0 = Math.max(xPos(u, e.t0), b.left), x1 = Math.min(xPos(u, t1), right);
      if (x1 < b.left || x0 > right) return;
      var bad = e.kind === "outage" || e.kind === "stall" || e.error, h = (EVENT_H - 4) * pr, y = laneTop + pr;
      ctx.fillStyle = bad ? "rgba(198,40,40,0.30)" : "rgba(90,100,120,0.22)";
      ctx.fillRect(x0, y, Math.max(x1 - x0, 2 * pr), h);
      var text = e.name + (e.kind === "outage" ? " (no connection)" : e.error ? " (failed)" : "");
      barLabel(ctx, text, x0, Math.max(x1, x0 + 2 * pr), y, h, bad ? "#a01818" : "#2c3340", right);
    });
    BY_START.forEach(function (i) {
      var f = D.findings[i], c = sev(f.severity);
      var x0 = Math.max(xPos(u, f.t0), b.left), x1 = Math.min(f.t1 > f.t0 ? xPos(u, f.t1) : x0, right);
      if (x1 < b.left || x0 > right) return;
      var h = (LANE_H - 3) * pr, y = laneTop + (EVENT_H + LANES[i] * LANE_H) * pr + pr;
      x1 = Math.max(x1, x0 + 3 * pr);
      ctx.fillStyle = c.bar;
      ctx.fillRect(x0, y, x1 - x0, h);
      ctx.fillStyle = c.line;
      ctx.fillRect(x0, y, 2 * pr, h);
      barLabel(ctx, "F" + (i + 1) + " " + (f.what || f.headline), x0 + 2 * pr, x1, y, h, "#1d2330", right);
    });
    ctx.restore();
    // Event marks in the plot: thin grey lines, no fill (a stall of the
    // server's answers to the samplers too: its lane bar, red, names it and
    // its length; the lines bound the gap it left).
    ctx.save();
    ctx.beginPath();
    ctx.rect(b.left, b.top, b.width, b.height);
    ctx.clip();
    ctx.strokeStyle = "rgba(70,78,92,0.55)";
    ctx.lineWidth = pr;
    ctx.setLineDash([4 * pr, 3 * pr]);
    ctx.beginPath();
    D.events.forEach(function (e) {
      var t1 = e.t1 < 0 ? DUR : e.t1, x0 = Math.round(xPos(u, e.t0)) + 0.5, x1 = Math.round(xPos(u, t1)) + 0.5;
      ctx.moveTo(x0, b.top); ctx.lineTo(x0, bottom);
      if (x1 - x0 >= 1) { ctx.moveTo(x1, b.top); ctx.lineTo(x1, bottom); }
    });
    ctx.stroke();
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
      if (ax.fixed && ax.min != null && ax.max != null) return [ax.min, ax.max];
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

  function heightOf(spec) { return (spec.id === "throughput" || spec.id === "aas" ? 230 : 180) + PAD_TOP; }

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
        label: withUnit(s.label, unitText(spec.axes[s.axis || 0])),
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
        label: withUnit(a.label, unitText(a)),
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
          // A log axis's steps vary by decade: label each with its unit.
          var lg = u.scales[scaleKey[i]].distr === 3;
          return splits.map(function (v) { return lg ? (v == null ? "" : value(a.unit, v)) : tick(a.unit, v, incr); });
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
      padding: [PAD_TOP ? PAD_TOP + 6 : null, null, null, null],
      scales: scales,
      axes: axes,
      series: series,
      bands: st.bands,
      hooks: {
        drawClear: [function (u) { c.drawStart = performance.now(); drawLanes(u); }],
        draw: [function () { if (c.drawMs == null) c.drawMs = Math.round(performance.now() - c.drawStart); }],
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
    var c = { spec: spec, el: el, log: !!spec.logOn };
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
        row.axes = axesOf(c);
        // Each legend entry as shown, with the unit of its series' axis.
        var labels = c.u.root.querySelectorAll(".u-legend .u-series .u-label");
        // With the shape of what it draws: points with a value, the
        // highest, and the longest unbroken climb (a stall's "running"
        // line rises tick by tick).
        row.legend = spec.series.map(function (s, i) {
          var sh = shapeOf(c.u.data[i + 1]);
          return { label: labels[i + 1] ? labels[i + 1].textContent : "", unit: unitText(spec.axes[s.axis || 0]), axis: s.axis || 0,
            defined: sh.defined, peak: sh.peak, rise: sh.rise };
        });
        row.gaps = gapsOf(c.u.data);
        row.log = c.u.scales.y.distr === 3;
      }
      result.charts.push(row);
    });
    (D.omitted || []).forEach(function (o) { result.charts.push({ id: o.id, title: o.title, state: "omitted", why: o.why }); });
    result.ms = Date.now() - started;
    result.cursorSync = check(cursorSync);
    result.stackToggle = check(stackToggle);
    result.logToggle = check(logToggle);
    // Zoom one chart's way and check every chart followed, then zoom out;
    // first, with every series hidden, count what else is inked inside
    // each plot (the lanes must leave it empty).
    if (charts.length > 0) bandPixels(result, zoomCheck); else zoomCheck(result);
  }
  // shapeOf sums up one series: how many points have a value, the
  // highest, and the longest run of points each above the one before.
  function shapeOf(ys) {
    var out = { defined: 0, peak: null, rise: 0 }, run = 0, prev = null;
    for (var i = 0; i < ys.length; i++) {
      var v = ys[i];
      if (v == null || !isFinite(v)) { run = 0; prev = null; continue; }
      out.defined++;
      if (out.peak == null || v > out.peak) out.peak = v;
      run = prev != null && v > prev ? run + 1 : 1;
      if (run > out.rise) out.rise = run;
      prev = v;
    }
    return out;
  }
  // gapsOf counts the times between a chart's first and last value where
  // none of its series has one: a hole in the picture.
  function gapsOf(data) {
    var has = [], first = -1, last = -1, gaps = 0;
    for (var i = 0; i < data[0].length; i++) {
      has[i] = false;
      for (var k = 1; k < data.length; k++) {
        var v = data[k][i];
        if (v != null && isFinite(v)) { has[i] = true; break; }
      }
      if (has[i]) { if (first < 0) first = i; last = i; }
    }
    for (var j = first; j >= 0 && j <= last; j++) if (!has[j]) gaps++;
    return gaps;
  }
  function zoomCheck(result) {
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
  // axesOf lists a chart's y axes as drawn: label, unit, range, log.
  function axesOf(c) {
    return c.spec.axes.map(function (a, i) {
      var sc = c.u.scales[i === 0 ? "y" : "y2"];
      return { label: c.u.axes[i + 1].label, unit: a.unit, text: unitText(a), min: sc.min, max: sc.max, log: sc.distr === 3 };
    });
  }

  // bandPixels hides every series of every chart, lets them redraw,
  // counts the coloured pixels left in each plot area into its row
  // (bandPixels), and shows the series again.
  function bandPixels(result, then) {
    var saved = charts.map(function (c) { return c.u.series.map(function (s) { return s.show; }); });
    charts.forEach(function (c) { for (var i = 1; i < c.u.series.length; i++) c.u.setSeries(i, { show: false }); });
    setTimeout(function () {
      charts.forEach(function (c) {
        var row = result.charts.filter(function (r) { return r.id === c.spec.id; })[0];
        try { row.bandPixels = coloured(c.u); } catch (err) { row.bandPixels = -1; problems.push("selftest " + c.spec.id + ": " + err); }
      });
      charts.forEach(function (c, k) { for (var i = 1; i < c.u.series.length; i++) c.u.setSeries(i, { show: saved[k][i] }); });
      setTimeout(function () { then(result); }, 0);
    }, 0);
  }

  // coloured counts the pixels of a plot area with any colour (the grid
  // and the event marks are grey), however faint: a tint is a band.
  function coloured(u) {
    var b = u.bbox, img = u.ctx.getImageData(b.left, b.top, b.width, b.height).data, n = 0;
    for (var i = 0; i < img.length; i += 4) {
      if (img[i + 3] === 0) continue;
      var r = img[i], g = img[i + 1], bl = img[i + 2];
      if (Math.max(r, g, bl) - Math.min(r, g, bl) >= 40) n++;
    }
    return n;
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
    var initial = box.checked;
    if (c.log !== initial || (c.u.scales.y.distr === 3) !== initial) return "failed: the box and the scale disagree at the start";
    box.checked = !initial;
    box.dispatchEvent(new Event("change"));
    var ok = c.log === !initial && (c.u.scales.y.distr === 3) === !initial;
    box.checked = initial;
    box.dispatchEvent(new Event("change"));
    return ok && c.log === initial ? "ok" : "failed: the scale did not switch";
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
