package report

import (
	"bytes"
	"embed"
	"fmt"
	"io"
	"io/fs"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/report/internal/htmlpage"
	"github.com/firedrill/firedrill/report/present"
	"github.com/firedrill/firedrill/timeline"
)

// htmlAssets holds the page template, our script and style and the
// vendored uPlot; all are inlined into the page so it needs no network.
//
//go:embed assets
var htmlAssets embed.FS

// WriteHTML writes the self-contained HTML report of run and its findings
// to w: one file with its charts, tables and scripts, that opens offline.
// kinds says how each kind of target is presented (its database charts).
func WriteHTML(w io.Writer, run *timeline.Run, findings []diagnose.Finding, kinds present.Kinds) error {
	assets, err := fs.Sub(htmlAssets, "assets")
	if err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	if err := htmlpage.Render(w, assets, run, findings, kinds); err != nil {
		return fmt.Errorf("html report of %s: %w", run.Dir, err)
	}
	return nil
}

// WriteHTMLFile writes the report into the run directory as report.html,
// atomically, so a browser never opens half of it.
func WriteHTMLFile(run *timeline.Run, findings []diagnose.Finding, kinds present.Kinds) error {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, run, findings, kinds); err != nil {
		return err
	}
	return timeline.WriteFile(run.Dir, timeline.ReportFile, buf.Bytes())
}
