package intercept

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcp-gateway/mcp-gateway/interceptor/contract"
	"github.com/mcp-gateway/mcp-gateway/internal/catalog"
)

// Call is one tools/call as the hooks see it.
type Call struct {
	Server       string
	Tool         string // original name at the server
	ExportedTool string // the name the agent called
	Session      string
	Arguments    json.RawMessage // a JSON object, or nil
}

// Next sends a call with the given arguments to the server and returns its
// CallToolResult as JSON. Its errors are the server's and pass through the
// chain as they are.
type Next func(ctx context.Context, args json.RawMessage) (json.RawMessage, error)

// Error is an interceptor that failed (an error, a timeout, a plugin that
// is down, an answer that is not a valid decision) at a call it fails
// closed. Its message names the interceptor.
type Error struct {
	Interceptor string
	Err         error
}

func (e *Error) Error() string { return fmt.Sprintf("interceptor %q: %v", e.Interceptor, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// Options tune New. The zero value works.
type Options struct {
	Logger zerolog.Logger
	// Environ is the environment plugins and exec commands start with;
	// GATEWAY_ACCESS_TOKEN is always removed from it. nil means
	// os.Environ().
	Environ []string
}

// Engine runs the configured interceptors. Create it with New, Start it
// (plugins are launched then), Close it at shutdown. A nil *Engine applies
// to nothing. Methods are safe for concurrent use.
type Engine struct {
	log   zerolog.Logger
	chain []*link
	// any hook of the chain at each point: a call none applies to skips
	// the engine entirely.
	calls bool
}

// link is one interceptor of the chain.
type link struct {
	spec Spec
	// exactly one of these
	run    runner // plugin or exec
	filter *toolFilter
	guard  *secretGuard
	size   *sizeGuard
}

// runner sends one Request document and returns the Decision document,
// within timeout (errTimeout when it passes).
type runner interface {
	handle(ctx context.Context, doc []byte, timeout time.Duration) ([]byte, error)
	close()
}

// errTimeout is a hook that did not answer within its timeout.
var errTimeout = errors.New("timed out")

// tokenEnv is the gateway's own secret; no interceptor process gets it.
const tokenEnv = "GATEWAY_ACCESS_TOKEN"

// New builds the chain: the config's interceptors in order, preceded by a
// tool filter for every server whose mcp config entry has one
// (catalog.ToolsKey). servers also give the secret guard its values. New
// starts nothing.
//
// cfg comes from Parse or Load, which validated it; nil has no interceptors.
func New(cfg *Config, servers []catalog.ServerSpec, opts Options) *Engine {
	env := opts.Environ
	if env == nil {
		env = os.Environ()
	}
	env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, tokenEnv+"=") })
	e := &Engine{log: opts.Logger}
	for _, s := range servers {
		if s.Tools != nil {
			spec := Spec{Name: catalog.ToolsKey + ":" + s.Name, Type: TypeToolFilter, Servers: []string{literal(s.Name)},
				Allow: s.Tools.Allow, Deny: s.Tools.Deny}
			e.chain = append(e.chain, &link{spec: spec, filter: &toolFilter{allow: spec.Allow, deny: spec.Deny}})
		}
	}
	if cfg == nil {
		cfg = &Config{}
	}
	for _, spec := range cfg.Interceptors {
		l := &link{spec: spec}
		switch spec.Type {
		case TypePlugin:
			l.run = newPlugin(spec, cfg.PluginHost, env, opts.Logger)
		case TypeExec:
			l.run = &execRunner{command: spec.Command, env: env, log: opts.Logger.With().Str("interceptor", spec.Name).Logger()}
		case TypeToolFilter:
			l.filter = &toolFilter{allow: spec.Allow, deny: spec.Deny}
		case TypeSecretGuard:
			l.guard = newSecretGuard(spec, servers)
		case TypeSizeGuard:
			l.size = &sizeGuard{maxArgs: spec.MaxArgumentBytes, maxResult: spec.MaxResultBytes}
		default: // Parse admits no other type
			opts.Logger.Error().Str("interceptor", spec.Name).Str("type", spec.Type).Msg("unknown interceptor type ignored")
			continue
		}
		if l.hooks(contract.HookBefore) || l.hooks(contract.HookAfter) {
			e.calls = true
		}
		e.chain = append(e.chain, l)
	}
	if len(e.chain) == 0 {
		return nil // nothing to run: callers skip a nil engine at no cost
	}
	return e
}

// literal is a glob that matches exactly s (a server key may hold '*').
func literal(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// hooks reports whether the link runs at hook.
func (l *link) hooks(h contract.Hook) bool {
	switch {
	case l.run != nil:
		return slices.Contains(l.spec.Hooks, h)
	case l.filter != nil:
		return h == contract.HookTools
	default: // guards
		return h == contract.HookBefore || h == contract.HookAfter
	}
}

// inScope reports whether the link applies to a server's tool ("" for a
// whole listing: the server alone decides).
func (l *link) inScope(server, tool string) bool {
	return matchAny(l.spec.Servers, server) && (tool == "" || matchAny(l.spec.Tools, tool))
}

// Start launches the plugins and checks that each answers its handshake: a
// plugin that cannot start fails the gateway's start, as a bad config does.
func (e *Engine) Start(ctx context.Context) error {
	if e == nil {
		return nil
	}
	for _, l := range e.chain {
		if p, ok := l.run.(*pluginRunner); ok {
			if err := p.start(); err != nil {
				e.Close()
				return &Error{Interceptor: l.spec.Name, Err: err}
			}
		}
	}
	return nil
}

// Close ends every plugin process and waits for it. Idempotent.
func (e *Engine) Close() {
	if e == nil {
		return
	}
	for _, l := range e.chain {
		if l.run != nil {
			l.run.close()
		}
	}
}

// Applies reports whether any before or after hook applies to a call of
// server's tool (original name). When it does not, the call pays nothing.
func (e *Engine) Applies(server, tool string) bool {
	if e == nil || !e.calls {
		return false
	}
	for _, l := range e.chain {
		if (l.hooks(contract.HookBefore) || l.hooks(contract.HookAfter)) && l.inScope(server, tool) {
			return true
		}
	}
	return false
}

// Call runs the chain around next: every before hook in order (a deny or a
// respond ends the walk), the server unless answered, then every after hook
// in order. It returns the result for the agent; for the audit log, what
// each interceptor that denied or changed the call did ("name:action");
// and, for the decisions metric, the names of the interceptors that saw the
// call (ran a hook at it) and let it through unchanged at every hook they
// ran, each once, so that what interceptors see can be counted, not only
// what they change. Errors are next's as they are, or an *Error for an
// interceptor that failed closed.
func (e *Engine) Call(ctx context.Context, c *Call, next Next) (res json.RawMessage, changed, passed []string, err error) {
	var ran []string
	res, changed, err = e.call(ctx, c, next, &ran)
	return res, changed, passes(ran, changed), err
}

// passes filters ran (the interceptors that ran a hook at a call, in
// order, each once) to those with no entry in trace, in place.
func passes(ran, trace []string) []string {
	out := ran[:0]
	for _, name := range ran {
		if !slices.ContainsFunc(trace, func(d string) bool { return d == name || strings.HasPrefix(d, name+":") }) {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// call is Call's walk; it notes in ran each interceptor that runs a hook.
func (e *Engine) call(ctx context.Context, c *Call, next Next, ran *[]string) (json.RawMessage, []string, error) {
	var trace []string
	args := c.Arguments
	req := func(hook contract.Hook, result json.RawMessage) *contract.Request {
		return &contract.Request{Hook: hook, Server: c.Server, Tool: c.Tool, ExportedTool: c.ExportedTool,
			Session: c.Session, Params: &contract.CallParams{Name: c.ExportedTool, Arguments: args}, Result: result}
	}
	var res json.RawMessage
	answered := false
	for _, l := range e.chain {
		if !l.hooks(contract.HookBefore) || !l.inScope(c.Server, c.Tool) {
			continue
		}
		*ran = append(*ran, l.spec.Name)
		d, err := l.before(ctx, req(contract.HookBefore, nil))
		if err == nil {
			err = checkBefore(&d)
		}
		if err != nil {
			if l.spec.FailOpen {
				e.log.Warn().Ctx(ctx).Err(err).Str("interceptor", l.spec.Name).Str("server", c.Server).Str("tool", c.ExportedTool).
					Msg("interceptor failed; letting the call through (failOpen)")
				trace = append(trace, l.spec.Name+":failed-open")
				continue
			}
			return nil, append(trace, l.spec.Name+":failed"), &Error{Interceptor: l.spec.Name, Err: err}
		}
		switch d.Action {
		case contract.ActionDeny:
			msg := fmt.Sprintf("denied by interceptor %q", l.spec.Name)
			if d.Message != "" {
				msg += ": " + d.Message
			}
			return contract.TextResult(msg, true), append(trace, l.spec.Name+":deny"), nil
		case contract.ActionRewrite:
			args = compact(d.Arguments)
			trace = append(trace, l.spec.Name+":rewrite")
		case contract.ActionRespond:
			res, answered = compact(d.Result), true
			trace = append(trace, l.spec.Name+":respond")
		}
		if answered {
			break
		}
	}
	if !answered {
		var err error
		if res, err = next(ctx, args); err != nil {
			return nil, trace, err
		}
	}
	for _, l := range e.chain {
		if !l.hooks(contract.HookAfter) || !l.inScope(c.Server, c.Tool) {
			continue
		}
		if !slices.Contains(*ran, l.spec.Name) {
			*ran = append(*ran, l.spec.Name)
		}
		d, err := l.after(ctx, req(contract.HookAfter, res))
		if err == nil {
			err = checkAfter(&d)
		}
		if err != nil {
			if l.spec.FailOpen {
				e.log.Warn().Ctx(ctx).Err(err).Str("interceptor", l.spec.Name).Str("server", c.Server).Str("tool", c.ExportedTool).
					Msg("interceptor failed; passing the result on (failOpen)")
				trace = append(trace, l.spec.Name+":failed-open")
				continue
			}
			return nil, append(trace, l.spec.Name+":failed"), &Error{Interceptor: l.spec.Name, Err: err}
		}
		if d.Action == contract.ActionReplace {
			res = compact(d.Result)
			trace = append(trace, l.spec.Name+":replace")
		}
	}
	return res, trace, nil
}

// Visible returns the tools of server the agent may be offered: the chain's
// tool filters and tools hooks, in order, each seeing what the previous
// left. A tools hook that fails hides every tool it would have been asked
// about (fail-closed), or none (failOpen); either way it is logged.
func (e *Engine) Visible(ctx context.Context, server string, tools []*mcp.Tool) []*mcp.Tool {
	if e == nil {
		return tools
	}
	for _, l := range e.chain {
		if !l.hooks(contract.HookTools) || !matchAny(l.spec.Servers, server) || len(tools) == 0 {
			continue
		}
		if l.filter != nil {
			tools = slices.DeleteFunc(slices.Clone(tools), func(t *mcp.Tool) bool {
				return matchAny(l.spec.Tools, t.Name) && !l.filter.allows(t.Name)
			})
			continue
		}
		var asked []json.RawMessage
		var names []string
		for _, t := range tools {
			if !matchAny(l.spec.Tools, t.Name) {
				continue
			}
			b, err := json.Marshal(t)
			if err != nil {
				continue
			}
			asked, names = append(asked, b), append(names, t.Name)
		}
		if len(asked) == 0 {
			continue
		}
		hide, err := l.list(ctx, &contract.Request{Hook: contract.HookTools, Server: server, Tools: asked})
		if err != nil {
			if l.spec.FailOpen {
				e.log.Warn().Ctx(ctx).Err(err).Str("interceptor", l.spec.Name).Str("server", server).Msg("tools hook failed; hiding nothing (failOpen)")
				continue
			}
			e.log.Error().Ctx(ctx).Err(err).Str("interceptor", l.spec.Name).Str("server", server).Int("hidden", len(names)).
				Msg("tools hook failed; hiding the tools it was asked about")
			hide = names
		}
		if len(hide) > 0 {
			tools = slices.DeleteFunc(slices.Clone(tools), func(t *mcp.Tool) bool {
				return slices.Contains(hide, t.Name) && slices.Contains(names, t.Name)
			})
		}
	}
	return tools
}

// before asks the link about a call.
func (l *link) before(ctx context.Context, req *contract.Request) (contract.Decision, error) {
	switch {
	case l.guard != nil:
		return l.guard.before(req), nil
	case l.size != nil:
		return l.size.before(req), nil
	}
	return l.ask(ctx, req)
}

// after asks the link about a result.
func (l *link) after(ctx context.Context, req *contract.Request) (contract.Decision, error) {
	switch {
	case l.guard != nil:
		return l.guard.after(req), nil
	case l.size != nil:
		return l.size.after(req), nil
	}
	return l.ask(ctx, req)
}

// list asks the link which tools to hide.
func (l *link) list(ctx context.Context, req *contract.Request) ([]string, error) {
	d, err := l.ask(ctx, req)
	if err != nil {
		return nil, err
	}
	if d.Action != "" && d.Action != contract.ActionContinue {
		return nil, fmt.Errorf("answered action %q to a tools hook (only hide)", d.Action)
	}
	return d.Hide, nil
}

// ask sends req to the link's process within its timeout and decodes the
// decision.
func (l *link) ask(ctx context.Context, req *contract.Request) (contract.Decision, error) {
	doc, err := json.Marshal(req)
	if err != nil {
		return contract.Decision{}, err
	}
	out, err := l.run.handle(ctx, doc, l.spec.Timeout)
	if err != nil {
		if errors.Is(err, errTimeout) {
			return contract.Decision{}, fmt.Errorf("no answer within %s", l.spec.Timeout)
		}
		return contract.Decision{}, err
	}
	return decode(out, req.Hook)
}

// decode reads a decision document. Empty output continues; a bare
// CallToolResult (an object with "content") answers the call (before) or
// replaces the result (after), as docker/mcp-gateway's exec interceptors do.
func decode(out []byte, hook contract.Hook) (contract.Decision, error) {
	out = bytes.TrimSpace(out)
	if len(out) == 0 {
		return contract.Continue(), nil
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(out, &probe); err != nil || probe == nil {
		return contract.Decision{}, fmt.Errorf("answered something other than a JSON object: %.60q", out)
	}
	if _, ok := probe["content"]; ok {
		if _, ok := probe["action"]; !ok && hook != contract.HookTools {
			action := contract.ActionRespond
			if hook == contract.HookAfter {
				action = contract.ActionReplace
			}
			return contract.Decision{Action: action, Result: out}, nil
		}
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	var d contract.Decision
	if err := dec.Decode(&d); err != nil {
		return contract.Decision{}, fmt.Errorf("answered an invalid decision: %v", err)
	}
	return d, nil
}

// compact returns a document on one line: a plugin may answer pretty
// printed JSON, and what the gateway passes on as bytes (to a stdio
// server, to the agent on the fast path) is one line. Validated before.
func compact(doc json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, doc) != nil {
		return doc
	}
	return b.Bytes()
}

// checkBefore validates a before decision.
func checkBefore(d *contract.Decision) error {
	switch d.Action {
	case "", contract.ActionContinue, contract.ActionDeny:
		return nil
	case contract.ActionRewrite:
		if a := bytes.TrimSpace(d.Arguments); len(a) == 0 || a[0] != '{' || !json.Valid(a) {
			return errors.New("rewrite: arguments must be a JSON object")
		}
		return nil
	case contract.ActionRespond:
		return checkResult(d.Result)
	}
	return fmt.Errorf("answered action %q to a before hook (continue, deny, rewrite or respond)", d.Action)
}

// checkAfter validates an after decision.
func checkAfter(d *contract.Decision) error {
	switch d.Action {
	case "", contract.ActionContinue:
		return nil
	case contract.ActionReplace:
		return checkResult(d.Result)
	}
	return fmt.Errorf("answered action %q to an after hook (continue or replace)", d.Action)
}

// checkResult reports whether res is a CallToolResult the SDK accepts.
func checkResult(res json.RawMessage) error {
	if r := bytes.TrimSpace(res); len(r) == 0 || r[0] != '{' {
		return errors.New("result must be a CallToolResult object")
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(res, &members); err != nil {
		return fmt.Errorf("result is not a CallToolResult: %v", err)
	}
	if _, ok := members["content"]; !ok {
		return errors.New(`result is not a CallToolResult: no "content"`)
	}
	var r mcp.CallToolResult
	if err := json.Unmarshal(res, &r); err != nil {
		return fmt.Errorf("result is not a CallToolResult: %v", err)
	}
	return nil
}
