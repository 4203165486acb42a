// Package htmlpage builds the HTML report's page: the header and tables
// rendered by html/template, the charts' data as one JSON blob the page's
// script draws with uPlot. Package report embeds the assets and calls
// Render; keeping the page here gives its many small helpers their own
// namespace, apart from the terminal and JSON reports.
package htmlpage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"strings"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/report/present"
	"github.com/firedrill/firedrill/timeline"
)

// The files Render reads from its asset FS.
const (
	TemplateFile = "page.html.tmpl"
	UPlotJSFile  = "uPlot.iife.min.js"
	UPlotCSSFile = "uPlot.min.css"
	ScriptFile   = "report.js"
	StyleFile    = "report.css"
)

var funcs = template.FuncMap{
	"clock":    clock,
	"window":   windowText,
	"ms":       msText,
	"msUS":     msFromUS,
	"msFloat":  func(us float64) float64 { return us / 1000 },
	"count":    countText,
	"num":      numText,
	"rate":     rateText,
	"bytes":    bytesText,
	"severity": severityClass,
	"sqlstate": sqlstateName,
	"isURL":    isURL,
	"lower":    strings.ToLower,
	"sides":    func(a, b sideView) []sideView { return []sideView{a, b} },
	"inc":      func(i int) int { return i + 1 },
}

// Render writes the report page of run and its findings to w, inlining
// the template, script and style files of assets (see the *File names).
// The database charts are those kinds presents for the run's kind.
// Nothing is written if the page cannot be built.
func Render(w io.Writer, assets fs.FS, run *timeline.Run, findings []diagnose.Finding, kinds present.Kinds) error {
	tmpl, a, err := loadTemplate(assets, TemplateFile)
	if err != nil {
		return err
	}
	p, err := buildPage(run, findings, kinds)
	if err != nil {
		return err
	}
	p.assets = a
	var buf bytes.Buffer
	buf.Grow(len(p.Data) + 256<<10)
	if err := tmpl.Execute(&buf, p); err != nil {
		return fmt.Errorf("render page: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write page: %w", err)
	}
	return nil
}

// assets are the inlined files.
type assets struct {
	UPlotJS  template.JS
	UPlotCSS template.CSS
	JS       template.JS
	CSS      template.CSS
}

// loadTemplate reads the template tmplName and the files every page
// inlines.
func loadTemplate(fsys fs.FS, tmplName string) (*template.Template, assets, error) {
	var a assets
	read := func(name string) (string, error) {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return "", fmt.Errorf("report asset %s: %w", name, err)
		}
		return string(b), nil
	}
	var s [5]string
	for i, name := range []string{tmplName, UPlotJSFile, UPlotCSSFile, ScriptFile, StyleFile} {
		var err error
		if s[i], err = read(name); err != nil {
			return nil, a, err
		}
	}
	// Scripts and styles are inlined verbatim (they are ours, or vendored
	// at a pinned version); one that could end its element early would
	// cut the page, so refuse it.
	for i, name := range []string{UPlotJSFile, UPlotCSSFile, ScriptFile, StyleFile} {
		low := strings.ToLower(s[i+1])
		if strings.Contains(low, "</script") || strings.Contains(low, "</style") {
			return nil, a, fmt.Errorf("report asset %s: contains an end tag, cannot be inlined", name)
		}
	}
	tmpl, err := template.New(tmplName).Funcs(funcs).Parse(s[0])
	if err != nil {
		return nil, a, fmt.Errorf("report template: %w", err)
	}
	a.UPlotJS, a.UPlotCSS = template.JS(s[1]), template.CSS(s[2])
	a.JS, a.CSS = template.JS(s[3]), template.CSS(s[4])
	return tmpl, a, nil
}

// encodeData is the page's data blob. encoding/json escapes <, > and & in
// strings (\u003c …), so no "</script" can appear in it whatever a
// scenario name or error message holds.
func encodeData(v any) (template.JS, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(true)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("encode report data: %w", err)
	}
	return template.JS(bytes.TrimSpace(buf.Bytes())), nil
}
