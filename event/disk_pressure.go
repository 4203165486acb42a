package event

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/firedrill/firedrill/scenario"
)

const (
	// pressureChunk is the size of each write; pacing works at this grain.
	pressureChunk = 1 << 20
	// pressureSyncEvery is how much is written between fsyncs: often enough
	// that the data really goes to the disk during the event (not at the
	// end, or whenever the kernel flushes), seldom enough that the event
	// is not mostly fsync latency.
	pressureSyncEvery = 8 << 20
	// pressureFilePattern names the temp file where the filesystem cannot
	// make an unnamed one, so that a leftover can be traced.
	pressureFilePattern = "firedrill-disk-pressure-*"
)

// oTmpfile is Linux's O_TMPFILE (__O_TMPFILE|O_DIRECTORY on amd64 and
// arm64), which package syscall does not name.
const oTmpfile = 0o20000000 | syscall.O_DIRECTORY

// createUnlinked opens a file in dir that has no name: the kernel frees
// its blocks when the last descriptor closes, so even a firedrill killed
// with SIGKILL leaves no file behind to fill the disk. O_TMPFILE makes
// it unnamed from the start; on a filesystem without O_TMPFILE the file
// is created and unlinked at once (a kill in between leaves a file named
// by pressureFilePattern).
func createUnlinked(dir string) (*os.File, error) {
	fd, err := syscall.Open(dir, syscall.O_RDWR|syscall.O_CLOEXEC|oTmpfile, 0o600)
	if err == nil {
		return os.NewFile(uintptr(fd), filepath.Join(dir, "(unlinked)")), nil
	}
	if !errors.Is(err, syscall.EOPNOTSUPP) && !errors.Is(err, syscall.EISDIR) && !errors.Is(err, syscall.EINVAL) {
		return nil, err
	}
	file, err := os.CreateTemp(dir, pressureFilePattern)
	if err != nil {
		return nil, err
	}
	if err := os.Remove(file.Name()); err != nil {
		return nil, errors.Join(err, file.Close())
	}
	return file, nil
}

// diskPressureKind is how a scenario writes a disk_pressure event.
var diskPressureKind = Kind{
	EventKind: scenario.EventKind{
		Name:    "disk_pressure",
		Keys:    []string{"size", "duration", "rate", "path", "mode", "fsync_delay"},
		Example: "{kind: disk_pressure, at: 10s, size: 512MB, duration: 30s}",
		Decode:  decodeDiskPressure,
	},
	Build: BuildWith(newDiskPressure),
}

// Modes of disk_pressure: what the event does to the server's disk.
const (
	// modeWrite competes for the disk by writing a file: what a backup
	// copy does, on whatever disk the machine has.
	modeWrite = "write"
	// modeSlow writes the file too, and makes the embedded server's disk
	// behave as a busy device for as long as the event runs: every sync
	// takes FsyncDelay and writes to the syncing file wait for it
	// (internal/slowdisk). On a disk that absorbs the copy without
	// delaying anyone (this machine's, INCIDENTS.md §5) it is the only
	// way to see what a busy disk does to the server.
	modeSlow = "slow"
)

// defaultFsyncDelay is a slow disk's sync latency when the scenario gives
// none: just above the 2 s Redis waits for an AOF fsync before it writes
// anyway and blocks, so that Redis stalls a few hundred ms about every 2 to
// 3 s, as in the seed.
const defaultFsyncDelay = 2300 * time.Millisecond

// diskPressureConfig is what a disk_pressure event takes: write and fsync
// Size bytes at Rate bytes/s (0 = as fast as the disk goes) into a file
// under Path (default: beside the embedded server's data directory, on its
// filesystem), for Duration if one is given, then remove it; in Mode slow
// also make the server's syncs take FsyncDelay meanwhile.
type diskPressureConfig struct {
	Size       int64
	Duration   time.Duration
	Rate       int64
	Path       string
	Mode       string // modeWrite or modeSlow ("" = modeWrite)
	FsyncDelay time.Duration
}

func decodeDiskPressure(d *scenario.EventDecoder) (any, time.Duration) {
	var c diskPressureConfig
	d.Key("size", func(v scenario.Value) {
		var ok bool
		if c.Size, ok = v.Size(); ok && c.Size <= 0 {
			v.Errorf("%s: size must be above 0", d.What())
		}
	})
	d.Key("duration", func(v scenario.Value) { c.Duration, _ = v.Duration() })
	d.Key("rate", func(v scenario.Value) { c.Rate, _ = v.ByteRate() })
	d.Key("path", func(v scenario.Value) {
		if path, ok := v.Str(); ok {
			if path == "" {
				v.Errorf("path: empty")
				return
			}
			c.Path = path
		}
	})
	d.Key("mode", func(v scenario.Value) {
		if mode, ok := v.Str(); ok {
			if mode != modeWrite && mode != modeSlow {
				v.Hintf("mode: write (the default) competes for the disk; mode: slow also makes the embedded server's syncs slow",
					"%s: unknown mode %s", d.What(), v.Quote())
				return
			}
			c.Mode = mode
		}
	})
	d.Key("fsync_delay", func(v scenario.Value) {
		if delay, ok := v.Duration(); ok {
			if delay <= 0 {
				v.Errorf("%s: fsync_delay must be above 0", d.What())
				return
			}
			c.FsyncDelay = delay
		}
	})
	d.Need("size")
	if d.Has("fsync_delay") && c.Mode != modeSlow && (!d.Has("mode") || d.Good("mode")) {
		d.Hintf("add mode: slow", "%s: fsync_delay is the slow disk's; it needs mode: slow", d.What())
	}
	if c.Mode == modeSlow && c.FsyncDelay == 0 {
		c.FsyncDelay = defaultFsyncDelay
	}
	if !d.Has("path") {
		what := d.What()
		d.Later(func(s *scenario.Scenario) {
			if !s.Target.Embedded() {
				d.Hintf("set path to a directory on the server's filesystem", "%s: path is needed when the target is not embedded", what)
			}
		})
	}
	return c, c.Duration
}

// diskPressure competes with the server for the disk: it writes and
// fsyncs a temp file on the data directory's filesystem, then removes it.
//
// It writes Size bytes once. With a Duration it stops when the duration
// is over, and if it reaches Size sooner it keeps rewriting the same file
// from the start until then: the disk stays busy and the space stays
// taken for the whole duration, but the file never grows beyond Size.
//
// In mode slow it also switches the embedded server's slow disk on for as
// long as it runs (Env.SlowDisk; internal/slowdisk says what that models
// and what not) and off when it ends, is cancelled or fails. A server
// firedrill did not start has no slow disk to switch: the event then
// writes its file only, and its outcome says so. Two slow events that
// overlap share the one switch: the first to end turns it off.
type diskPressure struct {
	name       string
	size       int64
	rate       int64 // bytes/s; 0 = as fast as the disk goes
	duration   time.Duration
	path       string
	slow       bool          // mode slow
	fsyncDelay time.Duration // the slow disk's sync latency
}

var (
	_ Event   = (*diskPressure)(nil)
	_ Checker = (*diskPressure)(nil)
)

func newDiskPressure(spec scenario.Event, c diskPressureConfig) Event {
	return &diskPressure{
		name:       Name(spec),
		size:       c.Size,
		rate:       c.Rate,
		duration:   c.Duration,
		path:       c.Path,
		slow:       c.Mode == modeSlow,
		fsyncDelay: c.FsyncDelay,
	}
}

// Check finds the directory to write in. Before the embedded server has
// started (a Restart but no DataDir yet) its directory cannot be judged.
func (d *diskPressure) Check(env *Env) error {
	if d.path == "" && env.DataDir == "" && env.Restart != nil {
		return nil
	}
	_, err := d.directory(env)
	return err
}

// directory is where the temp file goes: Path, else the directory that
// holds the data directory, which must be on the same filesystem. Never
// inside the data directory, whose files belong to the server.
func (d *diskPressure) directory(env *Env) (string, error) {
	dir := d.path
	if dir == "" {
		if env.DataDir == "" {
			return "", fmt.Errorf("disk_pressure %s: disk_pressure needs path: on a non-embedded target", d.name)
		}
		dataDir := filepath.Clean(env.DataDir)
		dir = filepath.Dir(dataDir)
		same, err := sameFilesystem(dir, dataDir)
		if err != nil {
			return "", fmt.Errorf("disk_pressure %s: %w", d.name, err)
		}
		if !same {
			return "", fmt.Errorf("disk_pressure %s: the data directory %s is a filesystem of its own, so nothing beside it "+
				"shares its disk; set path: to a directory on the disk to load", d.name, dataDir)
		}
	} else if env.DataDir != "" && isWithin(dir, env.DataDir) {
		return "", fmt.Errorf("disk_pressure %s: path %s is inside the data directory %s; choose a directory beside it",
			d.name, dir, env.DataDir)
	}
	info, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("disk_pressure %s: %w", d.name, err)
	}
	if !info.IsDir() {
		return "", fmt.Errorf("disk_pressure %s: path %s is not a directory", d.name, dir)
	}
	return dir, nil
}

// pressureStats are what a disk_pressure run measured.
type pressureStats struct {
	written  int64
	fsyncs   int
	maxFsync time.Duration
}

// Run writes, fsyncs and removes the file. The file is removed on every
// path out, cancellation included.
func (d *diskPressure) Run(ctx context.Context, env *Env, started Started) (outcome string, detail map[string]any, err error) {
	dir, err := d.directory(env)
	if err != nil {
		return "", nil, err
	}
	file, err := createUnlinked(dir)
	if err != nil {
		return "", nil, fmt.Errorf("disk_pressure %s: create a file in %s: %w", d.name, dir, err)
	}
	defer func() {
		if closeErr := file.Close(); closeErr != nil {
			err = errors.Join(err, closeErr)
		}
	}()

	// Random bytes, so that compressing or deduplicating filesystems
	// cannot make the writes cheaper than the server's would be.
	chunk := make([]byte, pressureChunk)
	rand.NewChaCha8([32]byte{}).Read(chunk)

	detail = map[string]any{"dir": dir, "size": d.size, "rate": d.rate}
	slowNote := ""
	if d.slow {
		detail["mode"] = modeSlow
		if env.SlowDisk == "" {
			slowNote = "; no slow disk: only a server firedrill starts with its slow-disk library can have one " +
				"(a --dsn server's process cannot load it), so only the file was written"
			detail["slow_disk"] = "unavailable"
		} else {
			if err := env.SlowDisk.On(d.fsyncDelay); err != nil {
				return "", detail, fmt.Errorf("disk_pressure %s: %w", d.name, err)
			}
			defer func() {
				if offErr := env.SlowDisk.Off(); offErr != nil {
					err = errors.Join(err, fmt.Errorf("disk_pressure %s: %w", d.name, offErr))
				}
			}()
			detail["fsync_delay_ms"] = d.fsyncDelay.Milliseconds()
			slowNote = fmt.Sprintf("; slow disk: every fsync of the server took %s more", Took(d.fsyncDelay))
		}
	}
	Notify(started, maps.Clone(detail))
	begin := time.Now()
	var stop time.Time
	if d.duration > 0 {
		stop = begin.Add(d.duration)
	}
	stats, stoppedEarly, err := d.write(ctx, file, chunk, begin, stop)
	elapsed := max(time.Since(begin), time.Microsecond)
	detail["bytes"] = stats.written
	detail["fsyncs"] = stats.fsyncs
	detail["max_fsync_ms"] = float64(stats.maxFsync.Microseconds()) / 1000
	detail["seconds"] = elapsed.Seconds()
	if err != nil {
		return "", detail, Cancelled(ctx, fmt.Errorf("disk_pressure %s: writing in %s: %w", d.name, dir, err))
	}

	var text strings.Builder
	fmt.Fprintf(&text, "wrote %s in %s (%s/s), %d %s, slowest fsync %d ms",
		formatBytes(stats.written), Took(elapsed), formatBytes(int64(float64(stats.written)/elapsed.Seconds())),
		stats.fsyncs, plural(stats.fsyncs, "fsync"), stats.maxFsync.Milliseconds())
	switch {
	case stats.written > d.size:
		passes := math.Round(float64(stats.written)/float64(d.size)*10) / 10
		fmt.Fprintf(&text, ", %s passes over a %s file", strconv.FormatFloat(passes, 'f', -1, 64), formatBytes(d.size))
	case stoppedEarly:
		fmt.Fprintf(&text, "; the duration ended before %s", formatBytes(d.size))
	}
	text.WriteString(slowNote)
	return text.String(), detail, nil
}

// write writes chunks into file until size is reached once (stop is
// zero) or until stop, rewriting from the start; stoppedEarly says that
// stop came before size was reached once.
func (d *diskPressure) write(ctx context.Context, file *os.File, chunk []byte, begin, stop time.Time) (stats pressureStats, stoppedEarly bool, err error) {
	var offset, unsynced int64
	sync := func() error {
		syncBegin := time.Now()
		if err := file.Sync(); err != nil {
			return err
		}
		stats.fsyncs++
		stats.maxFsync = max(stats.maxFsync, time.Since(syncBegin))
		unsynced = 0
		return nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return stats, false, err
		}
		if !stop.IsZero() && !time.Now().Before(stop) {
			break
		}
		if offset == d.size {
			if stop.IsZero() {
				break
			}
			offset = 0
		}
		if d.rate > 0 {
			// Pace: the next chunk may start once the bytes so far are due.
			due := begin.Add(time.Duration(float64(stats.written) / float64(d.rate) * float64(time.Second)))
			if !stop.IsZero() && due.After(stop) {
				due = stop
			}
			if wait := time.Until(due); wait > 0 {
				timer := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					timer.Stop()
					return stats, false, ctx.Err()
				case <-timer.C:
				}
				continue // check ctx and stop again
			}
		}
		n := min(int64(len(chunk)), d.size-offset)
		if _, err := file.WriteAt(chunk[:n], offset); err != nil {
			return stats, false, err
		}
		offset += n
		stats.written += n
		unsynced += n
		if unsynced >= pressureSyncEvery || offset == d.size {
			if err := sync(); err != nil {
				return stats, false, err
			}
		}
	}
	if unsynced > 0 {
		if err := sync(); err != nil {
			return stats, false, err
		}
	}
	return stats, stats.written < d.size, nil
}

// WantsSlowDisk says whether a scenario's events need the embedded
// server's slow disk (a disk_pressure event in mode slow), so that its
// backend starts the server with the slow-disk library (internal/slowdisk)
// and gives events its control in Env.SlowDisk.
func WantsSlowDisk(events []scenario.Event) bool {
	for _, spec := range events {
		if c, ok := spec.Config.(diskPressureConfig); ok && spec.Kind == diskPressureKind.Name && c.Mode == modeSlow {
			return true
		}
	}
	return false
}

// sameFilesystem reports whether two paths are on the same filesystem.
func sameFilesystem(a, b string) (bool, error) {
	infoA, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	infoB, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	statA, okA := infoA.Sys().(*syscall.Stat_t)
	statB, okB := infoB.Sys().(*syscall.Stat_t)
	if !okA || !okB {
		return true, nil // cannot tell here; assume the common layout
	}
	return statA.Dev == statB.Dev, nil
}

// isWithin reports whether path is dir or below it, after resolving
// symbolic links where the paths exist.
func isWithin(path, dir string) bool {
	path, dir = resolvePath(path), resolvePath(dir)
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// resolvePath makes path absolute and resolves its symbolic links; a path
// that does not exist (yet) is only cleaned, and fails later where it is
// used, with a clearer error.
func resolvePath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		return resolved
	}
	return filepath.Clean(path)
}

// formatBytes prints a byte count with a binary unit: "512 MiB", "1.5 GiB".
func formatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	value := float64(n)
	unit := 0
	for value >= 1024 && unit < len(units)-1 {
		value /= 1024
		unit++
	}
	if unit == 0 || value >= 10 || value == float64(int64(value)) {
		return fmt.Sprintf("%.0f %s", value, units[unit])
	}
	return fmt.Sprintf("%.1f %s", value, units[unit])
}

// plural is noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}
