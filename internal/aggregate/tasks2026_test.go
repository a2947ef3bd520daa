package aggregate

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
	"github.com/mcp-gateway/mcp-gateway/internal/supervisor"
)

// TestTaskIDs: an id opens to its server and the server's id on every
// replica with the same key, whatever the names hold (dots, NUL, non-ASCII);
// a process-local one only on its replica, saying so; another key, a
// tampered payload or MAC, and no id of the gateway's all open to -32602.
func TestTaskIDs(t *testing.T) {
	key := []byte("shared key of the deployment")
	a, b := newTaskIDs(key, "aaaa"), newTaskIDs(key, "bbbb")
	for _, c := range []struct{ server, orig string }{
		{"fx", "1"}, {"github/acme/weather", "786512e2-9e0d-44bd-8f29-789f320fe840"}, {"s.x", "a.b\x00c"}, {"é", ""},
	} {
		id := a.mint(c.server, c.orig, false)
		for _, ids := range []*taskIDs{a, b} {
			if server, orig, err := ids.open(id); err != nil || server != c.server || orig != c.orig {
				t.Errorf("open(mint(%q, %q)) on %s = %q, %q, %v", c.server, c.orig, ids.replica, server, orig, err)
			}
		}
		local := a.mint(c.server, c.orig, true)
		if server, orig, err := a.open(local); err != nil || server != c.server || orig != c.orig {
			t.Errorf("a local id on its replica: %q, %q, %v", server, orig, err)
		}
		if _, _, err := b.open(local); !invalid(err) || !strings.Contains(err.Error(), "another gateway replica") {
			t.Errorf("a local id on another replica: %v, want -32602 naming the replica", err)
		}
	}
	id := a.mint("fx", "1", false)
	payload, mac, _ := strings.Cut(strings.TrimPrefix(id, taskIDPrefix), ".")
	other := newTaskIDs([]byte("another key"), "aaaa")
	// Another task's payload under this one's MAC: a client renaming the
	// server or the server's id in an id it holds.
	otherPayload, _, _ := strings.Cut(strings.TrimPrefix(a.mint("fy", "1", false), taskIDPrefix), ".")
	forgedPayload := taskIDPrefix + otherPayload + "." + mac
	for _, bad := range []string{"", "1", "task-0123", taskIDPrefix, taskIDPrefix + payload, id + "x", forgedPayload,
		taskIDPrefix + payload + "." + strings.Repeat("A", len(mac))} {
		if _, _, err := a.open(bad); !invalid(err) {
			t.Errorf("open(%q) = %v, want -32602", bad, err)
		}
	}
	if _, _, err := other.open(id); !invalid(err) {
		t.Errorf("an id under another key: %v, want -32602", err)
	}
	if newTaskIDs(nil, "r").mint("fx", "1", false) == newTaskIDs(nil, "r").mint("fx", "1", false) {
		t.Error("two processes without a key mint the same id: the key is not random")
	}
}

func invalid(err error) bool {
	var w *jsonrpc.Error
	return errors.As(err, &w) && w.Code == jsonrpc.CodeInvalidParams
}

// TestFromLegacyTask: a 2025 Task's ttl and pollInterval become whole
// milliseconds (rounded up, never shortened), absent or null ttl the
// revision's null, lastUpdatedAt its createdAt when missing, and an
// input_required task an empty inputRequests.
func TestFromLegacyTask(t *testing.T) {
	for in, want := range map[string]string{
		`{"taskId":"1","status":"working","createdAt":"c","lastUpdatedAt":"u","ttl":60000,"pollInterval":20}`:    `{"taskId":"g","status":"working","createdAt":"c","lastUpdatedAt":"u","ttlMs":60000,"pollIntervalMs":20}`,
		`{"taskId":"1","status":"working","createdAt":"c","ttl":null,"pollInterval":0.5}`:                        `{"taskId":"g","status":"working","createdAt":"c","lastUpdatedAt":"c","ttlMs":null,"pollIntervalMs":1}`,
		`{"taskId":"1","status":"input_required","statusMessage":"m","createdAt":"c","lastUpdatedAt":"u"}`:       `{"taskId":"g","status":"input_required","statusMessage":"m","createdAt":"c","lastUpdatedAt":"u","ttlMs":null,"inputRequests":{}}`,
		`{"taskId":"1","status":"completed","createdAt":"c","lastUpdatedAt":"u","ttl":1500.2,"pollInterval":-1}`: `{"taskId":"g","status":"completed","createdAt":"c","lastUpdatedAt":"u","ttlMs":1501}`,
		`{"taskId":"1","status":"working","createdAt":"c","ttl":0,"pollInterval":0}`:                             `{"taskId":"g","status":"working","createdAt":"c","lastUpdatedAt":"c","ttlMs":null}`,
	} {
		got, err := fromLegacyTask(json.RawMessage(in), "g")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(got)
		if string(b) != want {
			t.Errorf("fromLegacyTask(%s)\n = %s\nwant %s", in, b, want)
		}
	}
}

// TestTaskIDsBoundToTheProcessThatRunsThem: a task of a url server, which
// every replica reaches, opens on every replica; one of a stdio server (a
// child of this gateway process) only on the replica that minted it.
func TestTaskIDsBoundToTheProcessThatRunsThem(t *testing.T) {
	key := []byte("shared key of the deployment")
	here, there := newTaskIDs(key, "here"), newTaskIDs(key, "there")
	stdio := supervisor.New(catalog.ServerSpec{Name: "s", Kind: catalog.KindLocal, Command: []string{"server"}}, supervisor.Options{Logger: zerolog.Nop()})
	remote := supervisor.New(catalog.ServerSpec{Name: "u", Kind: catalog.KindRemote, URL: "https://mcp.example.com/mcp"}, supervisor.Options{Logger: zerolog.Nop()})
	for _, c := range []struct {
		up        Upstream
		elsewhere bool // opens on the other replica
	}{{remote, true}, {stdio, false}, {namedUpstream("n"), false}} {
		id := here.mint(c.up.Name(), "7", processLocal(c.up))
		if server, orig, err := here.open(id); err != nil || server != c.up.Name() || orig != "7" {
			t.Errorf("%s's task on its own replica: %q, %q, %v", c.up.Name(), server, orig, err)
		}
		if _, _, err := there.open(id); (err == nil) != c.elsewhere {
			t.Errorf("%s's task on another replica: %v; want it to open there: %v", c.up.Name(), err, c.elsewhere)
		}
	}
}

// TestUpstream2026TellsTheEras: a real server that speaks the 2026
// revision (the fixture serving both eras, which the supervisor opens with
// server/discover) is of the 2026 era, one that speaks only 2025-11-25 is
// not.
func TestUpstream2026TellsTheEras(t *testing.T) {
	for _, c := range []struct {
		fx   fixture.Options
		want bool
	}{{fixture.Options{BothEras: true}, true}, {fixture.Options{Tasks: true}, false}} {
		argv, env := fixture.Command(c.fx)
		envs := map[string]string{}
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			envs[k] = v
		}
		s := supervisor.New(catalog.ServerSpec{Name: "fx", Kind: catalog.KindLocal, Command: argv, Env: envs}, supervisor.Options{Logger: zerolog.Nop()})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		done := make(chan struct{})
		go func() { s.Run(ctx); close(done) }()
		err := s.WaitStarted(ctx)
		got := upstream2026(s)
		cancel()
		<-done
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("upstream2026 of a server that answered initialize with %s = %v, want %v", s.InitializeResultRaw(), got, c.want)
		}
	}
}

// TestDeclaresTasksExtension: only a capabilities object whose extensions
// name the tasks extension (with any value but null) declares it.
func TestDeclaresTasksExtension(t *testing.T) {
	for caps, want := range map[string]bool{
		`{"extensions":{"io.modelcontextprotocol/tasks":{}}}`:                 true,
		`{"tools":{},"extensions":{"io.modelcontextprotocol/tasks":{"a":1}}}`: true,
		`{"extensions":{"io.modelcontextprotocol/tasks":null}}`:               false,
		`{"extensions":{"io.modelcontextprotocol/other":{}}}`:                 false,
		`{"tasks":{}}`: false,
		`{}`:           false,
		`[]`:           false,
	} {
		if got := declaresTasksExtension(json.RawMessage(caps)); got != want {
			t.Errorf("declaresTasksExtension(%s) = %v, want %v", caps, got, want)
		}
	}
}
