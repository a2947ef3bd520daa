// Package contract holds the documents of mcp-gateway's interceptor
// contract: the Request every hook gets and the Decision it answers with, as
// JSON. Exec interceptors read and write them on stdin and stdout; plugins
// get and return them through package interceptor, which re-exports these
// names. This package imports no RPC stack, so that the gateway (and an exec
// interceptor written in Go) can use the documents without linking gRPC.
package contract

import "encoding/json"

// Hook names the point of a request at which an interceptor runs.
type Hook string

const (
	// HookBefore runs before a tools/call is sent to the server.
	HookBefore Hook = "before"
	// HookAfter runs once the server answered a tools/call successfully,
	// before the agent sees the result.
	HookAfter Hook = "after"
	// HookTools runs when a server's tools list is (re)listed, before the
	// gateway names and offers them: a hidden tool is never offered, and a
	// call to it fails as a call to an unknown tool.
	HookTools Hook = "tools"
)

// Action is what a Decision asks of the gateway.
type Action string

const (
	// ActionContinue changes nothing (the zero Decision).
	ActionContinue Action = "continue"
	// ActionDeny refuses a call (before only): the agent gets a tool error
	// result with Message, and the server is not called.
	ActionDeny Action = "deny"
	// ActionRewrite replaces the call's arguments (before only) with
	// Arguments, a JSON object; later interceptors and the server see them.
	ActionRewrite Action = "rewrite"
	// ActionRespond answers the call with Result (before only) without
	// calling the server; after hooks still run on it.
	ActionRespond Action = "respond"
	// ActionReplace replaces the server's result with Result (after only).
	ActionReplace Action = "replace"
)

// Request is what a hook is asked about.
type Request struct {
	Hook Hook `json:"hook"`
	// Server is the server's key in the gateway's mcp config.
	Server string `json:"server"`
	// Tool is the tool's name at the server; ExportedTool is the name the
	// agent called it by (they differ when two servers have a tool of the
	// same name). Empty for HookTools.
	Tool         string `json:"tool,omitempty"`
	ExportedTool string `json:"exportedTool,omitempty"`
	// Session is the agent's MCP session id ("" over stdio).
	Session string `json:"session,omitempty"`
	// Params are the call's params as the agent sent them, with the
	// arguments as the previous interceptor left them (before and after).
	Params *CallParams `json:"params,omitempty"`
	// Result is the server's CallToolResult, as JSON (after only).
	Result json.RawMessage `json:"result,omitempty"`
	// Tools are the server's tools as it listed them, each a JSON Tool
	// object with its original name (tools only).
	Tools []json.RawMessage `json:"tools,omitempty"`
}

// CallParams are the params of a tools/call. Name is the exported name: a
// script written for another gateway reads .params.name and
// .params.arguments.
type CallParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Arguments returns the call's arguments (nil when there are none).
func (r *Request) Arguments() json.RawMessage {
	if r.Params == nil {
		return nil
	}
	return r.Params.Arguments
}

// Decision is a hook's answer. The zero value continues.
type Decision struct {
	Action Action `json:"action,omitempty"`
	// Message is shown to the agent when the call is denied.
	Message string `json:"message,omitempty"`
	// Arguments replace the call's arguments (rewrite): a JSON object.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Result is the CallToolResult to answer with (respond, replace).
	Result json.RawMessage `json:"result,omitempty"`
	// Hide lists the original names of tools to hide (tools hook).
	Hide []string `json:"hide,omitempty"`
}

// Continue lets the call or result through unchanged.
func Continue() Decision { return Decision{Action: ActionContinue} }

// Deny refuses the call; the agent sees message in a tool error result.
func Deny(message string) Decision { return Decision{Action: ActionDeny, Message: message} }

// Rewrite replaces the call's arguments with args, a JSON object.
func Rewrite(args json.RawMessage) Decision { return Decision{Action: ActionRewrite, Arguments: args} }

// Respond answers the call with result, a CallToolResult, without calling
// the server.
func Respond(result json.RawMessage) Decision { return Decision{Action: ActionRespond, Result: result} }

// Replace replaces the server's result with result, a CallToolResult.
func Replace(result json.RawMessage) Decision { return Decision{Action: ActionReplace, Result: result} }

// Hide hides the named tools (original names) from the agent.
func Hide(tools ...string) Decision { return Decision{Hide: tools} }

// TextResult is a CallToolResult holding one text content, as JSON, for
// Respond and Replace; isError marks it a tool error.
func TextResult(text string, isError bool) json.RawMessage {
	b, _ := json.Marshal(struct {
		Content []textContent `json:"content"`
		IsError bool          `json:"isError,omitempty"`
	}{[]textContent{{"text", text}}, isError})
	return b
}

type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}
