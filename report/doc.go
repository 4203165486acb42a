// Package report turns a run directory into what people read. The HTML
// report (WriteHTML) is one self-contained file: the page, its data as one
// JSON blob, uPlot and our own script and style are all inlined, so it
// opens offline and can be mailed or attached to an incident.
//
// The page is written for an on-call engineer at 3 am: one line per
// finding at the top (severity, F-number, window, what, the remedy's first
// step); on every chart the finding windows and events in lanes above the
// plot, never over the data; every axis and legend entry with its unit;
// shares on 0–100 %; latency on a log axis when its highest p99 is more
// than 20× its median p50; charts with nothing to draw left out, each with
// one line saying why; the offered rate beside the served one under an
// arrival rate; deadlocks and refused connections with the failures.
//
// The browser tests (browser_test.go, browser_readable_test.go) check
// each of these in headless Chromium on recorded runs (testdata/runs,
// testdata/compare, ../diagnose/testdata). With -keep (`make
// test-report-browser`) each page, its DOM and its screenshots
// (first-screen.png: what the reader sees first; full-page.png) stay in
// testdata/artifacts/<test>/<run>/, which git ignores.
//
// uPlot is vendored through npm in web/ and copied into assets/ with its
// licence; `go generate ./report/` refreshes the copy after a version bump
// in web/package.json.
package report

//go:generate sh -c "cd web && npm ci --no-audit --no-fund && cp node_modules/uplot/dist/uPlot.iife.min.js node_modules/uplot/dist/uPlot.min.css ../assets/ && cp node_modules/uplot/LICENSE ../assets/uPlot.LICENSE"
