package interceptor

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
)

type recorder struct {
	Base
	hooks []Hook
}

func (r *recorder) BeforeCall(_ context.Context, req *Request) (Decision, error) {
	r.hooks = append(r.hooks, req.Hook)
	if string(req.Arguments()) == `{"fail":true}` {
		return Decision{}, errors.New("no")
	}
	return Rewrite(json.RawMessage(`{"x":1}`)), nil
}

func TestHandleDispatchesByHook(t *testing.T) {
	r := &recorder{}
	out, err := Handle(context.Background(), r, []byte(`{"hook":"before","server":"s","tool":"t","params":{"name":"t","arguments":{"a":1}}}`))
	if err != nil || string(out) != `{"action":"rewrite","arguments":{"x":1}}` {
		t.Fatalf("before: %s, %v", out, err)
	}
	// Base answers the hooks the plugin does not implement; an unknown hook
	// (a newer gateway) continues.
	for _, doc := range []string{`{"hook":"after","result":{"content":[]}}`, `{"hook":"tools","tools":[{"name":"a"}]}`, `{"hook":"prompt"}`} {
		out, err := Handle(context.Background(), r, []byte(doc))
		if err != nil || string(out) != `{"action":"continue"}` {
			t.Errorf("%s: %s, %v", doc, out, err)
		}
	}
	if _, err := Handle(context.Background(), r, []byte(`{"hook":"before","params":{"name":"t","arguments":{"fail":true}}}`)); err == nil {
		t.Error("the plugin's error was lost")
	}
	if _, err := Handle(context.Background(), r, []byte(`not json`)); err == nil {
		t.Error("a garbled request was accepted")
	}
	if len(r.hooks) != 2 {
		t.Errorf("BeforeCall ran %d times", len(r.hooks))
	}
}

func TestTextResult(t *testing.T) {
	if got := string(TextResult(`say "hi"`, true)); got != `{"content":[{"type":"text","text":"say \"hi\""}],"isError":true}` {
		t.Errorf("TextResult = %s", got)
	}
	if got := string(TextResult("ok", false)); got != `{"content":[{"type":"text","text":"ok"}]}` {
		t.Errorf("TextResult = %s", got)
	}
}
