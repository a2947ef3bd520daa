// Package interceptor is what an interceptor plugin for mcp-gateway imports.
//
// An interceptor sees every tools/call the gateway forwards (before the
// server is called, and after it answers) and every tools list a server
// publishes, and decides: let the call through, deny it with a message the
// agent sees, rewrite its arguments, answer it without calling the server,
// replace the server's result, or hide tools. A plugin is a separate binary
// that implements Interceptor and calls Serve from its main; the gateway runs
// it with hashicorp/go-plugin (gRPC, mutual TLS, a handshake cookie) through
// its plugin host, mcp-gateway-plugin-host, and restarts it when it dies.
//
// Every hook gets one Request and answers with one Decision: the same JSON
// documents an exec interceptor reads on stdin and writes on stdout, so that
// the two kinds of interceptors share one contract (see the README).
package interceptor

import (
	"context"
	"encoding/json"

	"github.com/mcp-gateway/mcp-gateway/interceptor/contract"
)

// The documents are declared in package contract (which links no RPC
// stack, so that the gateway can use them); these are the same types.
type (
	// Hook names the point of a request at which an interceptor runs.
	Hook = contract.Hook
	// Action is what a Decision asks of the gateway.
	Action = contract.Action
	// Request is what a hook is asked about (see contract.Request).
	Request = contract.Request
	// CallParams are the params of a tools/call (see contract.CallParams).
	CallParams = contract.CallParams
	// Decision is a hook's answer; the zero value continues (see
	// contract.Decision).
	Decision = contract.Decision
)

// The hooks (see contract.HookBefore and the others).
const (
	HookBefore = contract.HookBefore
	HookAfter  = contract.HookAfter
	HookTools  = contract.HookTools
)

// The actions (see contract.ActionContinue and the others).
const (
	ActionContinue = contract.ActionContinue
	ActionDeny     = contract.ActionDeny
	ActionRewrite  = contract.ActionRewrite
	ActionRespond  = contract.ActionRespond
	ActionReplace  = contract.ActionReplace
)

// Continue lets the call or result through unchanged.
func Continue() Decision { return contract.Continue() }

// Deny refuses the call; the agent sees message in a tool error result.
func Deny(message string) Decision { return contract.Deny(message) }

// Rewrite replaces the call's arguments with args, a JSON object.
func Rewrite(args json.RawMessage) Decision { return contract.Rewrite(args) }

// Respond answers the call with result, a CallToolResult, without calling
// the server.
func Respond(result json.RawMessage) Decision { return contract.Respond(result) }

// Replace replaces the server's result with result, a CallToolResult.
func Replace(result json.RawMessage) Decision { return contract.Replace(result) }

// Hide hides the named tools (original names) from the agent.
func Hide(tools ...string) Decision { return contract.Hide(tools...) }

// TextResult is a CallToolResult holding one text content, as JSON, for
// Respond and Replace; isError marks it a tool error.
func TextResult(text string, isError bool) json.RawMessage { return contract.TextResult(text, isError) }

// Interceptor is implemented by a plugin. Each method is called only for
// the hooks the gateway's config enables for the plugin, concurrently (one
// call per forwarded request), with a context that ends at the hook's
// timeout. An error fails the call closed (the agent gets an error naming
// the interceptor) unless the config says failOpen. Embed Base to implement
// only some hooks.
type Interceptor interface {
	BeforeCall(ctx context.Context, req *Request) (Decision, error)
	AfterCall(ctx context.Context, req *Request) (Decision, error)
	ListTools(ctx context.Context, req *Request) (Decision, error)
}

// Base continues at every hook; embed it and override what you need.
type Base struct{}

// BeforeCall continues.
func (Base) BeforeCall(context.Context, *Request) (Decision, error) { return Continue(), nil }

// AfterCall continues.
func (Base) AfterCall(context.Context, *Request) (Decision, error) { return Continue(), nil }

// ListTools hides nothing.
func (Base) ListTools(context.Context, *Request) (Decision, error) { return Continue(), nil }

// Handle dispatches one request document to impl by its hook and returns
// the decision document: what Serve does for each gRPC request.
func Handle(ctx context.Context, impl Interceptor, doc []byte) ([]byte, error) {
	var req Request
	if err := json.Unmarshal(doc, &req); err != nil {
		return nil, err
	}
	var d Decision
	var err error
	switch req.Hook {
	case HookBefore:
		d, err = impl.BeforeCall(ctx, &req)
	case HookAfter:
		d, err = impl.AfterCall(ctx, &req)
	case HookTools:
		d, err = impl.ListTools(ctx, &req)
	default:
		d = Continue()
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(d)
}
