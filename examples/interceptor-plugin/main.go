// Command interceptor-plugin is a small, complete mcp-gateway interceptor
// plugin (the README's example): it hides tools whose name starts with
// "delete", refuses calls whose arguments mention "rm -rf", and adds a
// footer to every text result.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/mcp-gateway/mcp-gateway/interceptor"
)

type policy struct{ interceptor.Base }

func (policy) ListTools(_ context.Context, req *interceptor.Request) (interceptor.Decision, error) {
	var hide []string
	for _, t := range req.Tools {
		var tool struct{ Name string }
		if json.Unmarshal(t, &tool) == nil && strings.HasPrefix(tool.Name, "delete") {
			hide = append(hide, tool.Name)
		}
	}
	return interceptor.Hide(hide...), nil
}

func (policy) BeforeCall(_ context.Context, req *interceptor.Request) (interceptor.Decision, error) {
	if bytes.Contains(req.Arguments(), []byte("rm -rf")) {
		return interceptor.Deny("destructive commands are not allowed here"), nil
	}
	return interceptor.Continue(), nil
}

func (policy) AfterCall(_ context.Context, req *interceptor.Request) (interceptor.Decision, error) {
	var res map[string]any
	if err := json.Unmarshal(req.Result, &res); err != nil {
		return interceptor.Decision{}, err
	}
	content, _ := res["content"].([]any)
	res["content"] = append(content, map[string]any{"type": "text", "text": "(checked by policy)"})
	out, err := json.Marshal(res)
	return interceptor.Replace(out), err
}

func main() { interceptor.Serve(policy{}) }
