// Package pluginhost is the plugin host's work (cmd/mcp-gateway-plugin-host):
// it runs one interceptor plugin with hashicorp/go-plugin (gRPC, AutoMTLS,
// the handshake cookie) and relays hook documents between the gateway,
// which speaks package pluginwire on the host's stdin and stdout, and the
// plugin. It keeps go-plugin, gRPC and protobuf out of the gateway's binary:
// a gateway without plugin interceptors never loads them.
//
// The host supervises nothing: it exits when the plugin exits, and the
// gateway, which started it in a process group of its own, restarts it.
// There is one host per plugin interceptor, not one for all: a plugin that
// hangs is killed with its host as one process group without touching the
// others, and restarts, backoff and timeouts stay in one place, the
// gateway. The price is one more process (about 14 MiB RSS) per plugin.
package pluginhost

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcp-gateway/mcp-gateway/interceptor"
	"github.com/mcp-gateway/mcp-gateway/internal/pluginwire"
)

// Options are what Run needs besides the plugin.
type Options struct {
	In  io.Reader // the gateway's Calls
	Out io.Writer // Hello, Replies and the exit notice
	// Log gets go-plugin's warnings and the plugin's stderr.
	Log io.Writer
	// Env is the plugin's whole environment (the gateway already removed
	// its token from the host's).
	Env []string
	// StartTimeout bounds the plugin's handshake.
	StartTimeout time.Duration
	// StopGrace is how long the plugin has to exit after the gateway
	// closed In (go-plugin closes the connection, then kills it).
	StopGrace time.Duration
}

// Run starts the plugin at path with args and serves the gateway until In
// closes (nil) or the plugin exits (an error saying how). A plugin that
// fails to start is reported on Out and returned.
//
// The plugin stays in the host's process group: the gateway kills the group
// to end both at once, and the plugin's children with them.
func Run(path string, args []string, o Options) error {
	cmd := exec.Command(path, args...)
	cmd.Env = o.Env
	// The plugin's unix socket goes in PLUGIN_UNIX_SOCKET_DIR, which the
	// gateway sets and removes; run without it (a test), the host keeps
	// it out of TMPDIR itself, where a killed plugin would leave it.
	if !slices.ContainsFunc(o.Env, func(kv string) bool { return strings.HasPrefix(kv, plugin.EnvUnixSocketDir+"=") }) {
		dir, err := os.MkdirTemp("", "mcp-gateway-plugin-")
		if err != nil {
			return fmt.Errorf("plugin socket directory: %w", err)
		}
		defer os.RemoveAll(dir)
		cmd.Env = append(slices.Clone(o.Env), plugin.EnvUnixSocketDir+"="+dir)
	}
	// A host killed alone takes its plugin along.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  interceptor.Handshake,
		Plugins:          plugin.PluginSet{interceptor.PluginName: &interceptor.GRPCPlugin{}},
		Cmd:              cmd,
		SkipHostEnv:      true, // cmd.Env
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		StartTimeout:     o.StartTimeout,
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "go-plugin", Level: hclog.Warn, Output: o.Log, JSONFormat: true}),
		Stderr:           o.Log,
		SyncStdout:       io.Discard,
		SyncStderr:       io.Discard,
	})
	w := &writer{out: o.Out}
	rpc, err := dispense(client)
	if err != nil {
		// No Kill: go-plugin's would wait for the plugin's stdout to
		// close, which a child of a garbage "plugin" may hold. The gateway
		// kills the host's group once the host exits.
		_ = w.send(pluginwire.Message{Error: err.Error()})
		return fmt.Errorf("start plugin: %w", err)
	}
	s := &server{rpc: rpc, w: w, exited: make(chan struct{}), calls: make(map[uint64]context.CancelFunc)}
	go func() {
		s.how = waitExit(cmd.Process.Pid, client, cmd)
		close(s.exited)
	}()
	if err := w.send(pluginwire.Message{Ready: true}); err != nil {
		client.Kill()
		return err
	}
	inDone := make(chan error, 1)
	go func() { inDone <- s.read(o.In) }()
	select {
	case <-s.exited:
		_ = w.send(pluginwire.Message{Exited: s.how})
		return errors.New("plugin " + s.how)
	case err := <-inDone:
		// The gateway is done with the plugin (or gone): end it gracefully.
		stopped := make(chan struct{})
		go func() { client.Kill(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(o.StopGrace):
		}
		return err
	}
}

func dispense(client *plugin.Client) (*interceptor.Client, error) {
	proto, err := client.Client()
	if err != nil {
		return nil, err
	}
	raw, err := proto.Dispense(interceptor.PluginName)
	if err != nil {
		return nil, err
	}
	rpc, ok := raw.(*interceptor.Client)
	if !ok {
		return nil, fmt.Errorf("dispensed %T", raw)
	}
	return rpc, nil
}

// waitExit blocks until the plugin (a child, pid) exits and says how. It
// does not reap it: go-plugin does, but only once the plugin's stdout and
// stderr closed, which a child of the plugin may delay; the host must not
// wait for that. When go-plugin reaped it first, its exit status is read
// from cmd once go-plugin says it exited (which it sets after the reaping).
func waitExit(pid int, client *plugin.Client, cmd *exec.Cmd) string {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err == nil {
			// si_code and si_status follow the signal number and errno
			// in the kernel's layout; x/sys/unix exposes only si_code.
			return describeExit(info.Code, siginfoStatus(&info))
		}
		// Reaped already: go-plugin's exited flag follows at once.
		for deadline := time.Now().Add(time.Second); !client.Exited() && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		if client.Exited() && cmd.ProcessState != nil {
			ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
			switch {
			case ws.Exited():
				return describeExit(1, int32(ws.ExitStatus()))
			case ws.Signaled():
				return describeExit(2, int32(ws.Signal()))
			}
		}
		return "exited"
	}
}

// describeExit says how a child ended, by si_code (CLD_EXITED 1,
// CLD_KILLED 2, CLD_DUMPED 3) and si_status.
func describeExit(code, status int32) string {
	switch code {
	case 1:
		return fmt.Sprintf("exited with status %d", status)
	case 2, 3:
		return fmt.Sprintf("was killed by %s", syscall.Signal(status))
	}
	return "exited"
}

// siginfoStatus is a SIGCHLD siginfo's si_status (exit status or signal),
// which x/sys/unix leaves in the struct's padding: in Linux's layout it
// follows si_pid and si_uid in the union after si_signo, si_errno and
// si_code, which is aligned to a pointer.
func siginfoStatus(info *unix.Siginfo) int32 {
	union := uintptr(16)
	if unsafe.Sizeof(uintptr(0)) == 4 {
		union = 12
	}
	return *(*int32)(unsafe.Add(unsafe.Pointer(info), union+8))
}

// writer writes one message per line; replies of concurrent calls do not
// interleave.
type writer struct {
	mu  sync.Mutex
	out io.Writer
}

func (w *writer) send(m pluginwire.Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err = w.out.Write(append(b, '\n'))
	return err
}

// server relays the gateway's calls to the plugin, each in its own
// goroutine.
type server struct {
	rpc    *interceptor.Client
	w      *writer
	exited chan struct{} // closed when the plugin exited
	how    string        // how, once exited is closed

	mu    sync.Mutex
	calls map[uint64]context.CancelFunc
}

// read handles the gateway's lines until In ends.
func (s *server) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), pluginwire.MaxLine)
	for sc.Scan() {
		var c pluginwire.Call
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil || c.ID == 0 {
			return fmt.Errorf("gateway sent an invalid call: %.80q", sc.Bytes())
		}
		if c.Cancel {
			s.mu.Lock()
			cancel := s.calls[c.ID]
			s.mu.Unlock()
			if cancel != nil {
				cancel()
			}
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		if c.TimeoutMs > 0 {
			ctx, cancel = context.WithTimeout(context.Background(), time.Duration(c.TimeoutMs)*time.Millisecond)
		}
		s.mu.Lock()
		s.calls[c.ID] = cancel
		s.mu.Unlock()
		go s.call(ctx, cancel, c)
	}
	return sc.Err()
}

// call asks the plugin and replies, unless the call was cancelled or its
// deadline passed (the gateway answered the agent already) or the plugin
// died (the host exits and the gateway fails every call in flight).
func (s *server) call(ctx context.Context, cancel context.CancelFunc, c pluginwire.Call) {
	defer func() {
		cancel()
		s.mu.Lock()
		delete(s.calls, c.ID)
		s.mu.Unlock()
	}()
	out, err := s.rpc.Handle(ctx, c.Doc)
	if ctx.Err() != nil {
		return
	}
	reply := pluginwire.Message{ID: c.ID}
	switch {
	case err != nil:
		st := status.Convert(err)
		if s.dying(st.Code() == codes.Unavailable) {
			return
		}
		// The plugin's own error, whatever its code: it answered, so it
		// is alive, and the hook fails.
		reply.Error = st.Message()
	case len(out) > pluginwire.MaxDoc:
		reply.Error = fmt.Sprintf("answered more than %d bytes", pluginwire.MaxDoc)
	case !json.Valid(out): // no Doc can carry it
		reply.Error = fmt.Sprintf("answered something other than a JSON object: %.60q", out)
	default:
		reply.Doc = out
	}
	_ = s.w.send(reply) // a gateway that is gone closes In too
}

// dying reports whether the plugin exited, or, when the connection broke
// (wait), exits within a moment: a broken connection is the plugin dying,
// or (rarely) a plugin that answered Unavailable itself.
func (s *server) dying(wait bool) bool {
	if !wait {
		select {
		case <-s.exited:
			return true
		default:
			return false
		}
	}
	select {
	case <-s.exited:
		return true
	case <-time.After(time.Second):
		return false
	}
}
