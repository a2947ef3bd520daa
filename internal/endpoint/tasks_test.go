package endpoint

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/fixture"
)

// TestTasksThroughTheEndpoint: a task-augmented tools/call and the tasks/*
// methods, which the Go SDK's server does not know, reach the server that
// made the task, over HTTP, for a session on the fast path and for one the
// SDK path serves (its client offers sampling).
func TestTasksThroughTheEndpoint(t *testing.T) {
	url, token, _ := inProcessGatewayOf(t, testSettings(t, 0), &strings.Builder{}, fixtureSpec("a", fixture.Options{Name: "a", Tasks: true}))
	for _, caps := range []string{`{}`, `{"sampling":{}}`} {
		s := newRawSessionWith(t, url, token, caps)
		one := s.result
		var created struct {
			Task struct {
				TaskID string `json:"taskId"`
				Status string `json:"status"`
			} `json:"task"`
		}
		res := one(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"task_echo","arguments":{"n":7},"task":{"ttl":60000}}}`)
		if err := json.Unmarshal(res, &created); err != nil || created.Task.TaskID == "" || created.Task.TaskID == "1" {
			t.Fatalf("caps %s: tools/call with task: %s", caps, res)
		}
		id := created.Task.TaskID
		if got := one(`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"` + id + `"}}`); !strings.Contains(string(got), `"taskId":"`+id+`"`) {
			t.Errorf("caps %s: tasks/get: %s", caps, got)
		}
		if got := one(`{"jsonrpc":"2.0","id":3,"method":"tasks/result","params":{"taskId":"` + id + `"}}`); !strings.Contains(string(got), `task result of a: {\"n\":7}`) {
			t.Errorf("caps %s: tasks/result: %s", caps, got)
		}
		if got := one(`{"jsonrpc":"2.0","id":4,"method":"tasks/list","params":{}}`); !strings.Contains(string(got), `"taskId":"`+id+`"`) {
			t.Errorf("caps %s: tasks/list: %s", caps, got)
		}
		// A task that is still working: the server refuses to cancel one
		// that is over, as the protocol asks.
		long := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"task_echo","arguments":{"ms":600000},"task":{}}}`
		if err := json.Unmarshal(one(long), &created); err != nil || created.Task.TaskID == "" {
			t.Fatalf("caps %s: a long task: %v", caps, err)
		}
		id = created.Task.TaskID
		if got := one(`{"jsonrpc":"2.0","id":6,"method":"tasks/cancel","params":{"taskId":"` + id + `"}}`); !strings.Contains(string(got), `"taskId":"`+id+`"`) || !strings.Contains(string(got), `"cancelled"`) {
			t.Errorf("caps %s: tasks/cancel: %s", caps, got)
		}
	}
}

// TestRootsWhenTheAgentArrives: a server asks for roots at its start,
// before any agent, and gets none. An agent with roots arriving over HTTP
// makes it ask again once the agent's standalone stream is open (where a
// request outside any call reaches it), and it gets that agent's roots.
func TestRootsWhenTheAgentArrives(t *testing.T) {
	logs := &syncBuffer{}
	url, token, _ := inProcessGatewayOf(t, testSettings(t, 0), logs, fixtureSpec("a", fixture.Options{Name: "a", AskRoots: true}))
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, nil)
	client.AddRoots(&mcp.Root{URI: "file:///agent/project", Name: "project"})
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: url, HTTPClient: &http.Client{Transport: fixture.Bearer(token, http.DefaultTransport)},
	}, legacySession())
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	waitFor(t, 20*time.Second, "the server to get the agent's roots", func() bool {
		return strings.Contains(logs.String(), "fixture: roots now [file:///agent/project]")
	})
}

// TestCallToolWithTask: in the search view, a call_tool with a task is
// the task call of the tool it names (a task the agent then fetches like
// any other), a call_tool naming no tool is call_tool's tool error, and in
// the default view call_tool stays unknown, task or not.
func TestCallToolWithTask(t *testing.T) {
	url, token, _ := inProcessGatewayOf(t, testSettings(t, 0), &strings.Builder{}, fixtureSpec("a", fixture.Options{Name: "a", Tasks: true}))
	s := newRawSessionWith(t, url+"?tools=search", token, `{}`)
	one := s.result
	var created struct {
		Task struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	res := one(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"task_echo","arguments":{"n":7}},"task":{"ttl":60000}}}`)
	if err := json.Unmarshal(res, &created); err != nil || created.Task.TaskID == "" {
		t.Fatalf("call_tool with a task: %s; want a created task", res)
	}
	if got := one(`{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":"` + created.Task.TaskID + `"}}`); !strings.Contains(string(got), `task result of a: {\"n\":7}`) {
		t.Errorf("tasks/result of call_tool's task: %s", got)
	}
	if got := one(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"no_such_tool"},"task":{}}}`); !strings.Contains(string(got), `"isError":true`) || !strings.Contains(string(got), "no_such_tool") {
		t.Errorf("call_tool with a task of an unknown tool: %s; want call_tool's tool error", got)
	}

	all := newRawSessionWith(t, url, token, `{}`)
	status, _, replies := all.post(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"task_echo"},"task":{}}}`)
	if status != http.StatusOK || len(replies) != 1 || replies[0].Error == nil {
		t.Errorf("call_tool with a task in the default view: %d %+v; want an unknown tool", status, replies)
	}
}
