package aggregate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-gateway/mcp-gateway/internal/rawjson"
)

// A 2025-era server's task as the tasks extension shows it to a 2026-era
// agent (see tasks2026.go): its Task in the extension's spelling, and
// tasks/get answered with what tasks/result gives once the task is over.

// task2026 is a Task as the extension spells it, from a 2025 server's.
type task2026 struct {
	ResultType     string          `json:"resultType,omitempty"`
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage,omitempty"`
	CreatedAt      string          `json:"createdAt"`
	LastUpdatedAt  string          `json:"lastUpdatedAt"`
	TTLMs          *int64          `json:"ttlMs"`
	PollIntervalMs *int64          `json:"pollIntervalMs,omitempty"`
	InputRequests  json.RawMessage `json:"inputRequests,omitempty"`
	Result         json.RawMessage `json:"result,omitempty"`
	Error          json.RawMessage `json:"error,omitempty"`
}

// fromLegacyTask reads a 2025 Task (ttl and pollInterval in ms, floats
// allowed) as a 2026 one with the gateway's id.
func fromLegacyTask(b json.RawMessage, id string) (task2026, error) {
	var t struct {
		Status        string   `json:"status"`
		StatusMessage string   `json:"statusMessage"`
		CreatedAt     string   `json:"createdAt"`
		LastUpdatedAt string   `json:"lastUpdatedAt"`
		TTL           *float64 `json:"ttl"`
		PollInterval  *float64 `json:"pollInterval"`
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return task2026{}, err
	}
	out := task2026{TaskID: id, Status: t.Status, StatusMessage: t.StatusMessage, CreatedAt: t.CreatedAt, LastUpdatedAt: cmpOr(t.LastUpdatedAt, t.CreatedAt)}
	out.TTLMs = positiveMs(t.TTL)
	out.PollIntervalMs = positiveMs(t.PollInterval)
	if out.Status == "input_required" {
		out.InputRequests = json.RawMessage(`{}`)
	}
	return out, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// positiveMs is a duration in whole milliseconds (rounded up, so that a
// ttl is never shortened), nil unless positive.
func positiveMs(v *float64) *int64 {
	if v == nil || *v <= 0 || math.IsInf(*v, 0) || math.IsNaN(*v) {
		return nil
	}
	n := int64(math.Ceil(*v))
	return &n
}

// legacyTaskGet answers tasks/get about a 2025 server's task: its status,
// and once the task is over what tasks/result gives, inlined (result, or
// the JSON-RPC error as error).
func (g *Gateway) legacyTaskGet(ctx context.Context, up Upstream, id string, ref json.RawMessage) (*rawResult, error) {
	res, err := callRaw(ctx, up, "tasks/get", ref)
	if err != nil {
		return nil, upstreamError(up.Name(), err)
	}
	t, err := fromLegacyTask(res, id)
	if err != nil {
		return nil, upstreamError(up.Name(), err)
	}
	if t.Status == "completed" || t.Status == "failed" {
		out, err := callRaw(ctx, up, "tasks/result", ref)
		var wire *jsonrpc.Error
		switch {
		case err == nil:
			t.Status, t.Result = "completed", withoutRelatedTask(out)
		case errors.As(err, &wire):
			t.Status = "failed"
			if t.Error, err = json.Marshal(wire); err != nil {
				return nil, upstreamError(up.Name(), err)
			}
		default:
			return nil, upstreamError(up.Name(), err)
		}
	}
	b, err := json.Marshal(t)
	if err != nil {
		return nil, upstreamError(up.Name(), err)
	}
	return &rawResult{raw: b}, nil
}

// withoutRelatedTask returns a tasks/result result without the 2025 era's
// related-task _meta member, which the revision leaves out of an inlined
// result (the task id is the tasks/get result's own).
func withoutRelatedTask(res json.RawMessage) json.RawMessage {
	if !bytes.Contains(res, []byte(relatedTaskKey)) {
		return res
	}
	meta, ok, err := rawjson.MemberValue(res, "_meta")
	if err != nil || !ok {
		return res
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(meta, &m) != nil {
		return res
	}
	if len(m) == 1 {
		return withoutMember(res, "_meta")
	}
	out, err := rawjson.SetMember(res, "_meta", withoutMember(meta, relatedTaskKey))
	if err != nil {
		return res
	}
	return out
}

// withoutMember returns obj without its member key, the others as they
// were, in their order; obj itself when it is not an object.
func withoutMember(obj json.RawMessage, key string) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for _, k := range rawjson.MemberNames(obj) {
		if k == key {
			continue
		}
		v, ok, err := rawjson.MemberValue(obj, k)
		if err != nil || !ok {
			return obj
		}
		name, err := json.Marshal(k)
		if err != nil {
			return obj
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.Write(name)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes()
}
