package timeline

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Writer appends to a run directory while the run goes on. Its methods
// are safe for concurrent use; records are buffered and reach the disk on
// Flush (once per tick) and Close, so a killed run loses at most a tick.
type Writer struct {
	dir    string
	mu     sync.Mutex
	f      *os.File
	gz     *gzip.Writer
	buf    *bufio.Writer
	enc    *json.Encoder
	err    error
	redact func(string) string
}

// Run directories and their files are private to their owner: a run
// records server details (addresses, settings, query texts, errors).
const (
	DirMode  os.FileMode = 0o700
	FileMode os.FileMode = 0o600
)

// Create makes the run directory dir (its parent must exist or be
// creatable) and opens its timeline for writing.
func Create(dir string) (*Writer, error) {
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return nil, fmt.Errorf("create run directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, TimelineFile), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, FileMode)
	if err != nil {
		return nil, fmt.Errorf("create timeline: %w", err)
	}
	// gzip keeps an hour of samples to a few MB; each Flush ends a
	// deflate block, so a killed run leaves a readable prefix.
	gz, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	w := &Writer{dir: dir, f: f, gz: gz, buf: bufio.NewWriterSize(gz, 64<<10)}
	w.enc = json.NewEncoder(w.buf)
	w.enc.SetEscapeHTML(false)
	return w, nil
}

// Dir is the run directory.
func (w *Writer) Dir() string { return w.dir }

// RedactWith makes Add pass the free texts of records (sample and mark
// errors, mark outcomes and string details) through redact before they
// are written, so that no password reaches the timeline. The records
// given to Add are changed in place.
func (w *Writer) RedactWith(redact func(string) string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.redact = redact
}

// Add appends one record to the timeline.
func (w *Writer) Add(r Record) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.redact != nil {
		redactRecord(r, w.redact)
	}
	if w.err == nil {
		w.err = w.enc.Encode(r)
	}
}

// Flush writes buffered records to the file.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.buf.Flush()
	}
	if w.err == nil {
		w.err = w.gz.Flush()
	}
	return w.err
}

// Close flushes and closes the timeline; the first write error, if any,
// is returned.
func (w *Writer) Close() error {
	ferr := w.Flush()
	if ferr == nil {
		ferr = w.gz.Close()
	}
	cerr := w.f.Close()
	if ferr != nil {
		return fmt.Errorf("write timeline: %w", ferr)
	}
	return cerr
}

// WriteJSON writes v as JSON to name in the run directory, through a
// temporary file so a reader never sees half of it. It is indented unless
// it is larger than indentJSONLimit (a summary of a 100,000-command
// script): indenting copies it again, twice its size in memory.
func WriteJSON(dir, name string, v any) error {
	// Measure first: the encoder's buffer is pooled, so a second encoding
	// reuses it, and the large case is written straight to the file
	// without json.Marshal's copy.
	var size byteCounter
	if err := json.NewEncoder(&size).Encode(v); err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	if size > indentJSONLimit {
		return writeFileWith(dir, name, func(w io.Writer) error {
			bw := bufio.NewWriter(w)
			if err := json.NewEncoder(bw).Encode(v); err != nil {
				return err
			}
			return bw.Flush()
		})
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	return WriteFile(dir, name, append(b, '\n'))
}

// byteCounter is a writer that only counts.
type byteCounter int

func (c *byteCounter) Write(p []byte) (int, error) {
	*c += byteCounter(len(p))
	return len(p), nil
}

// indentJSONLimit is the size above which WriteJSON writes compact JSON.
const indentJSONLimit = 4 << 20

// WriteFile writes data to name in dir atomically (temp file + rename),
// readable by its owner only (FileMode).
func WriteFile(dir, name string, data []byte) error {
	return writeFileWith(dir, name, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// writeFileWith is WriteFile with the content written by write.
func writeFileWith(dir, name string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(dir, "."+name+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := write(tmp); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := os.Chmod(tmp.Name(), FileMode); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// Run is a run directory read back: what reports, rules and compare use.
type Run struct {
	Dir       string
	Manifest  Manifest
	Summary   *Summary // nil if the run never finished
	Intervals []Interval
	Samples   []Sample
	Marks     []Mark
}

// ErrNotRun says a directory is not a firedrill run directory.
var ErrNotRun = errors.New("not a firedrill run directory")

// Open reads the run directory dir. A timeline cut short by a killed run
// (a partial last line) is read up to its last whole record.
func Open(dir string) (*Run, error) {
	r := &Run{Dir: dir}
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w (no %s)", dir, ErrNotRun, ManifestFile)
	}
	if err != nil {
		return nil, fmt.Errorf("read run: %w", err)
	}
	if err := json.Unmarshal(b, &r.Manifest); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	if !compatible(r.Manifest.Format) {
		return nil, fmt.Errorf("%s: run format %q is not readable by this firedrill (reads %s)",
			dir, r.Manifest.Format, Format)
	}
	if r.Manifest.Status == StatusRunning && r.Manifest.Process.Gone() {
		// Read as what it is; SettleKilled writes it down.
		r.Manifest.Status, r.Manifest.Error = StatusKilled, KilledError(r.Manifest.Process)
	}
	workloadInputsFromScenario(dir, r.Manifest.Workloads)
	if b, err := os.ReadFile(filepath.Join(dir, SummaryFile)); err == nil {
		r.Summary = new(Summary)
		if err := json.Unmarshal(b, r.Summary); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, SummaryFile), err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read summary: %w", err)
	}
	name := filepath.Join(dir, TimelineFile)
	f, err := os.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		name = filepath.Join(dir, PlainTimelineFile)
		f, err = os.Open(name)
	}
	if err != nil {
		return nil, fmt.Errorf("read timeline: %w", err)
	}
	defer f.Close()
	var src io.Reader = f
	if strings.HasSuffix(name, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		src = &cutShortReader{r: gz}
	}
	if err := r.readTimeline(src); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	r.redact()
	return r, nil
}

// cutShortReader ends a gzip stream that a killed run left without its
// trailer at the last complete block instead of failing.
type cutShortReader struct{ r io.Reader }

func (c *cutShortReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = io.EOF
	}
	return n, err
}

func compatible(format string) bool {
	return format == Format || strings.HasPrefix(format, Format+".")
}

func (r *Run) readTimeline(f io.Reader) error {
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	line := 0
	var pendingErr error
	for sc.Scan() {
		line++
		if pendingErr != nil { // a bad line followed by more: real corruption
			return pendingErr
		}
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			pendingErr = fmt.Errorf("line %d: %w", line, err)
			continue
		}
		switch {
		case rec.Interval != nil:
			r.Intervals = append(r.Intervals, *rec.Interval)
		case rec.Sample != nil:
			r.Samples = append(r.Samples, *rec.Sample)
		case rec.Mark != nil:
			r.Marks = append(r.Marks, *rec.Mark)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	sort.SliceStable(r.Intervals, func(i, j int) bool { return r.Intervals[i].End < r.Intervals[j].End })
	sort.SliceStable(r.Samples, func(i, j int) bool { return r.Samples[i].T < r.Samples[j].T })
	sort.SliceStable(r.Marks, func(i, j int) bool { return r.Marks[i].T < r.Marks[j].T })
	return nil // a bad last line is a run killed mid-write
}

// WorkloadIntervals returns the intervals of one workload in time order.
func (r *Run) WorkloadIntervals(workload string) []Interval {
	var out []Interval
	for _, iv := range r.Intervals {
		if iv.Workload == workload {
			out = append(out, iv)
		}
	}
	return out
}

// Point is one value of a series at a time.
type Point struct {
	T, V float64
}

// Series returns the values named key of the samples of source, in time
// order; ticks where the sampler failed or had no such value are absent.
func (r *Run) Series(source, key string) []Point {
	var out []Point
	for i := range r.Samples {
		s := &r.Samples[i]
		if s.Source != source {
			continue
		}
		if v, ok := s.Values[key]; ok {
			out = append(out, Point{s.T, v})
		}
	}
	return out
}

// SourceSamples returns the samples of one source in time order.
func (r *Run) SourceSamples(source string) []Sample {
	var out []Sample
	for _, s := range r.Samples {
		if s.Source == source {
			out = append(out, s)
		}
	}
	return out
}

// Keys lists the value names a source ever reported, sorted.
func (r *Run) Keys(source string) []string {
	seen := map[string]bool{}
	for _, s := range r.Samples {
		if s.Source == source {
			for k := range s.Values {
				seen[k] = true
			}
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
