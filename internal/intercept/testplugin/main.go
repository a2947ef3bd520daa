// Command testplugin is an interceptor plugin for the gateway's tests. It
// decides by the call's "text" argument, so one binary exercises every
// outcome and failure: deny, rewrite, respond, crash, hang (writes
// $TESTPLUGIN_CANCELFILE once its call is cancelled), garbage, error,
// status (an error with a gRPC code of its own), orphan (leaves a child
// that holds its stderr, writes the child's pid to $TESTPLUGIN_PIDFILE and
// exits), token (answers with GATEWAY_ACCESS_TOKEN as it sees it) and pid
// (answers with its process id); a result containing "replace-me" is
// replaced. It hides the tools named in $TESTPLUGIN_HIDE (comma-separated).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcp-gateway/mcp-gateway/interceptor"
)

type plugin struct{}

func (plugin) BeforeCall(ctx context.Context, req *interceptor.Request) (interceptor.Decision, error) {
	var args struct{ Text string }
	_ = json.Unmarshal(req.Arguments(), &args)
	switch args.Text {
	case "deny":
		return interceptor.Deny("no " + req.Tool + " for " + req.ExportedTool + " on " + req.Server), nil
	case "rewrite":
		return interceptor.Rewrite(json.RawMessage(`{"text":"rewritten by plugin"}`)), nil
	case "respond":
		return interceptor.Respond(interceptor.TextResult("responded by plugin", false)), nil
	case "crash":
		os.Exit(3)
	case "hang":
		<-ctx.Done()
		if f := os.Getenv("TESTPLUGIN_CANCELFILE"); f != "" {
			_ = os.WriteFile(f, []byte("cancelled"), 0o644)
		}
		select {} // never answers, even once the gateway gave up
	case "garbage":
		return interceptor.Decision{Action: "explode"}, nil
	case "error":
		return interceptor.Decision{}, errors.New("plugin refuses to decide")
	case "status":
		return interceptor.Decision{}, status.Error(codes.InvalidArgument, "plugin finds the arguments invalid")
	case "orphan":
		child := exec.Command("sleep", "60")
		child.Stdout, child.Stderr = os.Stderr, os.Stderr
		if err := child.Start(); err != nil {
			return interceptor.Decision{}, err
		}
		if err := os.WriteFile(os.Getenv("TESTPLUGIN_PIDFILE"), []byte(strconv.Itoa(child.Process.Pid)), 0o644); err != nil {
			return interceptor.Decision{}, err
		}
		os.Exit(3)
	case "token":
		return interceptor.Respond(interceptor.TextResult("token="+os.Getenv("GATEWAY_ACCESS_TOKEN"), false)), nil
	case "pid":
		return interceptor.Respond(interceptor.TextResult(strconv.Itoa(os.Getpid()), false)), nil
	}
	return interceptor.Continue(), nil
}

func (plugin) AfterCall(_ context.Context, req *interceptor.Request) (interceptor.Decision, error) {
	if strings.Contains(string(req.Result), "replace-me") {
		return interceptor.Replace(interceptor.TextResult("replaced by plugin", false)), nil
	}
	return interceptor.Continue(), nil
}

func (plugin) ListTools(_ context.Context, req *interceptor.Request) (interceptor.Decision, error) {
	hide := strings.Split(os.Getenv("TESTPLUGIN_HIDE"), ",")
	var out []string
	for _, t := range req.Tools {
		var tool struct{ Name string }
		if json.Unmarshal(t, &tool) == nil {
			for _, h := range hide {
				if h != "" && h == tool.Name {
					out = append(out, tool.Name)
				}
			}
		}
	}
	return interceptor.Hide(out...), nil
}

func main() { interceptor.Serve(plugin{}) }
