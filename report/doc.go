// Package report turns a run directory into what people read. The HTML
// report (WriteHTML) is one self-contained file: the page, its data as one
// JSON blob, uPlot and our own script and style are all inlined, so it
// opens offline and can be mailed or attached to an incident.
//
// uPlot is vendored through npm in web/ and copied into assets/ with its
// licence; `go generate ./report/` refreshes the copy after a version bump
// in web/package.json.
package report

//go:generate sh -c "cd web && npm ci --no-audit --no-fund && cp node_modules/uplot/dist/uPlot.iife.min.js node_modules/uplot/dist/uPlot.min.css ../assets/ && cp node_modules/uplot/LICENSE ../assets/uPlot.LICENSE"
