package pluginhost

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/pluginwire"
)

// testPlugin builds the gateway's test plugin (internal/intercept/testplugin).
func testPlugin(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "testplugin")
	if out, err := exec.Command("go", "build", "-o", bin, "../intercept/testplugin").CombinedOutput(); err != nil {
		t.Fatalf("build test plugin: %v\n%s", err, out)
	}
	return bin
}

// host runs Run in the test against the plugin, as the gateway would over
// pipes: send writes a Call, next reads a Message.
type host struct {
	t    testing.TB
	in   *io.PipeWriter
	out  *bufio.Scanner
	done chan error
}

func startHost(t testing.TB, plugin string) *host {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &host{t: t, in: inW, out: bufio.NewScanner(outR), done: make(chan error, 1)}
	go func() {
		err := Run(plugin, nil, Options{In: inR, Out: outW, Log: io.Discard, Env: os.Environ(),
			StartTimeout: 10 * time.Second, StopGrace: 3 * time.Second})
		outW.Close()
		h.done <- err
	}()
	t.Cleanup(func() {
		inW.Close()
		<-h.done
	})
	if m := h.next(); !m.Ready {
		t.Fatalf("first message %+v, want ready", m)
	}
	return h
}

func (h *host) send(c pluginwire.Call) {
	h.t.Helper()
	b, _ := json.Marshal(c)
	if _, err := h.in.Write(append(b, '\n')); err != nil {
		h.t.Fatal(err)
	}
}

func (h *host) next() pluginwire.Message {
	h.t.Helper()
	if !h.out.Scan() {
		h.t.Fatalf("host output ended: %v", h.out.Err())
	}
	var m pluginwire.Message
	if err := json.Unmarshal(h.out.Bytes(), &m); err != nil {
		h.t.Fatalf("host wrote %q: %v", h.out.Bytes(), err)
	}
	return m
}

func before(text string) json.RawMessage {
	return json.RawMessage(`{"hook":"before","server":"s","tool":"t","params":{"name":"t","arguments":{"text":"` + text + `"}}}`)
}

// Calls are answered by id, out of order; a cancelled one gets no answer;
// the plugin's own error is a reply, not the host's end; and when the
// plugin exits the host says how and returns.
func TestHostRelaysAndReportsExit(t *testing.T) {
	h := startHost(t, testPlugin(t))
	h.send(pluginwire.Call{ID: 1, Doc: before("hang")})
	h.send(pluginwire.Call{ID: 2, TimeoutMs: 5000, Doc: before("deny")})
	if m := h.next(); m.ID != 2 || !strings.Contains(string(m.Doc), `"action":"deny"`) {
		t.Fatalf("reply %+v, want call 2 denied", m)
	}
	h.send(pluginwire.Call{ID: 1, Cancel: true})
	h.send(pluginwire.Call{ID: 3, Doc: before("status")})
	if m := h.next(); m.ID != 3 || m.Error != "plugin finds the arguments invalid" {
		t.Fatalf("reply %+v, want call 3's error", m)
	}
	h.send(pluginwire.Call{ID: 4, Doc: before("crash")})
	if m := h.next(); m.Exited != "exited with status 3" {
		t.Fatalf("message %+v, want the plugin's exit with status 3 (and nothing for the cancelled call 1)", m)
	}
	if err := <-h.done; err == nil || !strings.Contains(err.Error(), "plugin exited with status 3") {
		t.Errorf("Run returned %v", err)
	}
	h.done <- nil // for the cleanup
}

// Closing the host's input stops the plugin and returns.
func TestHostStopsWhenInputCloses(t *testing.T) {
	h := startHost(t, testPlugin(t))
	h.send(pluginwire.Call{ID: 1, Doc: before("pid")})
	m := h.next()
	var res struct {
		Result struct{ Content []struct{ Text string } }
	}
	if err := json.Unmarshal(m.Doc, &res); err != nil || len(res.Result.Content) != 1 {
		t.Fatalf("pid reply %+v: %v", m, err)
	}
	pid := res.Result.Content[0].Text
	h.in.Close()
	if err := <-h.done; err != nil {
		t.Errorf("Run: %v", err)
	}
	h.done <- nil
	if _, err := os.Stat("/proc/" + pid); err == nil {
		t.Errorf("plugin %s still exists after the host stopped", pid)
	}
}

// A plugin that fails its handshake is reported as the first message.
func TestHostReportsFailedStart(t *testing.T) {
	script := filepath.Join(t.TempDir(), "garbage.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho 'hello, I am not a plugin'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Run(script, nil, Options{In: strings.NewReader(""), Out: outW, Log: io.Discard, Env: os.Environ(), StartTimeout: 10 * time.Second})
		outW.Close()
	}()
	sc := bufio.NewScanner(outR)
	var m pluginwire.Message
	if !sc.Scan() || json.Unmarshal(sc.Bytes(), &m) != nil || m.Error == "" || m.Ready {
		t.Fatalf("first message %q, want an error", sc.Bytes())
	}
	io.Copy(io.Discard, outR)
	if err := <-done; err == nil || !strings.Contains(err.Error(), "start plugin") {
		t.Errorf("Run: %v", err)
	}
}
