// Package sandbox is the MCP server built into the gateway binary, so that
// `mcp-gateway serve` offers useful tools with nothing else installed: shell
// commands and file access inside the sandbox the gateway runs in.
//
// The gateway runs it as a child process (`mcp-gateway builtin sandbox`)
// speaking MCP over stdio, like any other upstream server; Run is that
// process's whole job.
//
// User mistakes (a missing file, a bad mode, an edit that does not match) are
// reported as MCP tool errors whose text names the tool, the path and the
// reason, never as protocol errors: an agent can read and correct a tool
// error, while a protocol error looks like a broken server.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// server holds what the tool handlers share. It is safe for concurrent use:
// the SDK may run several tool calls at once.
type server struct {
	opts  Options // with defaults applied
	procs *procGroups
	// writeMu serializes write_file and edit_file so that two concurrent
	// edits of one file cannot lose an update between read and rename.
	writeMu sync.Mutex
}

// NewServer returns an MCP server named "sandbox" offering run_command,
// read_file, write_file, list_directory and edit_file.
//
// Processes that run_command leaves running are killed only by Run; a caller
// that serves this server some other way owns their cleanup.
func NewServer(opts Options) *mcp.Server {
	srv, _ := newServer(opts)
	return srv
}

func newServer(opts Options) (*mcp.Server, *procGroups) {
	s := &server{opts: opts.withDefaults(), procs: newProcGroups()}
	srv := mcp.NewServer(&mcp.Implementation{Name: "sandbox", Version: s.opts.Version}, &mcp.ServerOptions{
		Instructions: fmt.Sprintf("Runs shell commands and reads and writes files inside this sandbox. Relative paths resolve against %s.", s.opts.Workdir),
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "run_command", Description: runDescription}, s.runCommand)
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(srv, &mcp.Tool{Name: "read_file", Description: readDescription, Annotations: readOnly}, s.readFile)
	mcp.AddTool(srv, &mcp.Tool{Name: "write_file", Description: writeDescription, Annotations: &mcp.ToolAnnotations{IdempotentHint: true}}, s.writeFile)
	mcp.AddTool(srv, &mcp.Tool{Name: "list_directory", Description: listDescription, Annotations: readOnly}, s.listDirectory)
	mcp.AddTool(srv, &mcp.Tool{Name: "edit_file", Description: editDescription}, s.editFile)
	return srv, s.procs
}

// Run serves the sandbox server over in and out (newline-delimited JSON-RPC,
// as on stdio) until in reaches EOF or ctx is done, then kills every process
// group run_command started, waits for their leaders to be reaped, and
// returns. EOF returns nil; a done ctx returns an error wrapping ctx.Err().
//
// Run does not close in or out. When ctx ends first, a read of in may still
// be pending: the caller unblocks it by closing in (for os.Stdin, exiting).
func Run(ctx context.Context, in io.Reader, out io.Writer, opts Options) error {
	srv, procs := newServer(opts)
	defer procs.killAll()
	t := &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}}
	if err := srv.Run(ctx, t); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("sandbox server: %w", err)
	}
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// resolve makes p absolute against the server workdir.
func (s *server) resolve(p string) string {
	if p == "" {
		return s.opts.Workdir
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.opts.Workdir, p)
	}
	return filepath.Clean(p)
}

// pathError formats err as "<prefix><path>: <reason>" ("read_file: /x: no
// such file or directory"), dropping the syscall name os puts in front
// ("open", "readdirent"): the agent needs the path it asked about and why.
func pathError(prefix, path string, err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		err = pe.Err
	}
	return fmt.Errorf("%s%s: %w", prefix, path, err)
}

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}
