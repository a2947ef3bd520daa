// Package pluginwire is the protocol between the gateway and its plugin
// host (cmd/mcp-gateway-plugin-host), the one process that links
// hashicorp/go-plugin and gRPC: the gateway starts a host per plugin
// interceptor and sends it hook documents over the host's stdin; the host
// relays each to the plugin over go-plugin's gRPC connection and writes the
// answer to its stdout.
//
// Each message is one JSON object on one line. The host speaks first: one
// Hello, after the plugin passed its handshake (Ready) or failed to start
// (Error, after which the host exits). Then the gateway sends Calls, any
// number at once, each with an ID of its choosing; the host answers each
// with a Reply of the same ID, in any order. A Call with Cancel set ends the
// call of its ID (the plugin's context is cancelled); no Reply follows. When
// the plugin exits, the host says so and exits; when its stdin closes, the host stops
// the plugin and exits.
package pluginwire

import "encoding/json"

// Call is a hook for the plugin, or the cancellation of one.
type Call struct {
	ID uint64 `json:"id"`
	// TimeoutMs is the time the plugin has to answer: its context's
	// deadline. The gateway keeps its own timer; the host sends no Reply
	// once the deadline passed.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
	// Doc is the Request document (package contract), a JSON object.
	Doc    json.RawMessage `json:"doc,omitempty"`
	Cancel bool            `json:"cancel,omitempty"`
}

// Message is a line from the host. With an ID it is the Reply to the Call
// of that ID: the plugin's Decision document (Doc), or the error the plugin
// returned (Error; the plugin is alive). Without, it is news of the plugin:
// it passed its handshake (Ready), it failed to start (Error), it exited
// (Exited, saying how); after the last two the host exits.
type Message struct {
	ID     uint64          `json:"id,omitempty"`
	Doc    json.RawMessage `json:"doc,omitempty"`
	Error  string          `json:"error,omitempty"`
	Ready  bool            `json:"ready,omitempty"`
	Exited string          `json:"exited,omitempty"`
}

// MaxLine bounds one message either way: a document beyond it is refused,
// not buffered without end.
const MaxLine = 64 << 20

// MaxDoc bounds a plugin's answer, as an exec interceptor's output is
// bounded: more is a failed hook.
const MaxDoc = 16 << 20
