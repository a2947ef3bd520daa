package sandbox

import (
	"os"
	"path/filepath"
	"time"
)

// Options configures the sandbox server. The zero value is ready to use: every
// field documents what its zero value means.
type Options struct {
	// MaxOutputBytes caps what run_command returns of each of stdout and
	// stderr, so that a chatty command cannot produce a response larger than
	// the MCP frame limit (16 MiB in the go-sdk stdio transport, which drops
	// the whole session when exceeded). Output beyond the cap is counted and
	// reported by a marker. Zero or negative means 64 KiB.
	MaxOutputBytes int

	// MaxReadBytes caps how many bytes one read_file call returns; callers
	// page through larger files with offset. It exists for the same frame
	// limit as MaxOutputBytes. Zero or negative means 1 MiB.
	MaxReadBytes int

	// DefaultTimeout bounds a foreground run_command that sets no timeout_ms.
	// Zero or negative means 60 s. It is lowered to MaxTimeout if it exceeds it.
	DefaultTimeout time.Duration

	// MaxTimeout is the largest timeout_ms a caller may ask for; larger
	// values are refused with a tool error rather than silently shortened.
	// Zero or negative means 10 min.
	MaxTimeout time.Duration

	// Workdir is where commands run and relative paths resolve when a call
	// names no workdir. A relative Workdir is made absolute against the
	// process working directory. Empty means the process working directory
	// at the time NewServer is called.
	Workdir string

	// BackgroundDir receives one output file per background command
	// (stdout and stderr interleaved). It is created if missing. Empty means
	// os.TempDir().
	BackgroundDir string

	// Version is reported as the server version in the MCP handshake.
	// Empty means "dev".
	Version string
}

const (
	defaultMaxOutputBytes = 64 << 10
	defaultMaxReadBytes   = 1 << 20
	defaultTimeout        = 60 * time.Second
	defaultMaxTimeout     = 10 * time.Minute
)

// withDefaults returns a copy of o with every zero field replaced by its
// documented default and every path made absolute, so that the tools never
// look at a zero value again. Negative limits count as zero: NewServer has no
// error to return, and a default is safer than a server that refuses all work.
func (o Options) withDefaults() Options {
	if o.MaxOutputBytes <= 0 {
		o.MaxOutputBytes = defaultMaxOutputBytes
	}
	if o.MaxReadBytes <= 0 {
		o.MaxReadBytes = defaultMaxReadBytes
	}
	if o.MaxTimeout <= 0 {
		o.MaxTimeout = defaultMaxTimeout
	}
	if o.DefaultTimeout <= 0 {
		o.DefaultTimeout = defaultTimeout
	}
	o.DefaultTimeout = min(o.DefaultTimeout, o.MaxTimeout)
	if o.Version == "" {
		o.Version = "dev"
	}
	o.Workdir = absOrRoot(o.Workdir)
	if o.BackgroundDir == "" {
		o.BackgroundDir = os.TempDir()
	}
	o.BackgroundDir = absOrRoot(o.BackgroundDir)
	return o
}

// absOrRoot makes dir absolute, treating "" as the process working
// directory. Only a process whose working directory was deleted makes this
// fail; "/" is then the one directory certain to exist.
func absOrRoot(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "/"
	}
	return abs
}
