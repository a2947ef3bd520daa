package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// interceptorRuns measures what an interceptor that does nothing adds to a
// call: one session of back-to-back echo calls through a gateway without
// interceptors, then with a no-op go-plugin interceptor, then with a no-op
// exec interceptor (cat >/dev/null), both at before and after. Reported: the
// p50 latency and its difference to the gateway without, and the gateway's
// CPU per call; for the plugin, the plugin host's and the plugin's CPU too,
// for exec the reaped children's (the shells and cats).
func (b *bench) interceptorRuns(ctx context.Context) error {
	plugin := filepath.Join(b.tmp, "noopplugin")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", plugin, "github.com/mcp-gateway/mcp-gateway/bench/noopplugin")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build no-op plugin: %v: %s", err, out)
	}
	kinds := []struct {
		name string
		spec map[string]any // nil: no interceptor
	}{
		{"none", nil},
		{"go-plugin", map[string]any{"name": "noop", "type": "plugin", "path": plugin, "hooks": []string{"before", "after"}}},
		{"exec", map[string]any{"name": "noop", "type": "exec", "command": "cat >/dev/null", "hooks": []string{"before", "after"}}},
	}
	var base time.Duration
	for _, k := range kinds {
		var args []string
		if k.spec != nil {
			doc, err := json.Marshal(map[string]any{"interceptors": []any{k.spec}})
			if err != nil {
				return err
			}
			file := filepath.Join(b.tmp, "interceptors-"+k.name+".json")
			if err := os.WriteFile(file, doc, 0o644); err != nil {
				return err
			}
			args = []string{"--interceptors", file}
		}
		bx, err := newBox(b.bin, b.tmp, "intercept-"+k.name)
		if err != nil {
			return err
		}
		bx.protocol, bx.args = b.opt.protocol, args
		raw, err := json.Marshal(fixtureServers(1, plainServer))
		if err != nil {
			return err
		}
		b.boxes = append(b.boxes, bx)
		if _, err := bx.launch(ctx, string(raw)); err != nil {
			return fmt.Errorf("interceptor %s: %w", k.name, err)
		}
		cs, err := bx.connect(ctx, bx.httpClient())
		if err != nil {
			return err
		}
		work := []call{echoCall(cs, directEchoTool)}
		if _, err := drive(ctx, work, 0, warmupCalls/3); err != nil {
			cs.Close()
			return fmt.Errorf("interceptor %s warm-up: %w", k.name, err)
		}
		b.logf("interceptor %s, 1 session, %s", k.name, b.opt.duration)
		// The plugin runs under the plugin host, the gateway's child.
		hostPID, pluginPID := 0, 0
		for _, c := range childrenOf(bx.gwPID) {
			if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", c)); err == nil && filepath.Base(exe) == pluginHost {
				hostPID = c
			}
		}
		for _, c := range childrenOf(hostPID) {
			if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", c)); err == nil && exe == plugin {
				pluginPID = c
			}
		}
		if k.name == "go-plugin" && (hostPID == 0 || pluginPID == 0) {
			cs.Close()
			return fmt.Errorf("interceptor %s: plugin host %d, plugin %d: not found under the gateway", k.name, hostPID, pluginPID)
		}
		gw0, err := cpuTime(bx.gwPID)
		if err != nil {
			cs.Close()
			return err
		}
		kids0, _ := childCPUTime(bx.gwPID)
		pl0, _ := cpuTime(pluginPID)
		host0, _ := cpuTime(hostPID)
		s, err := drive(ctx, work, b.opt.duration, 0)
		cs.Close()
		if err != nil {
			return fmt.Errorf("interceptor %s: %w", k.name, err)
		}
		gw1, err := cpuTime(bx.gwPID)
		if err != nil {
			return err
		}
		kids1, _ := childCPUTime(bx.gwPID)
		pl1, _ := cpuTime(pluginPID)
		host1, _ := cpuTime(hostPID)
		p50 := s.pct(50)
		switch k.name {
		case "none":
			base = p50
			b.tbl.add("no interceptor, 1 session: p50", fmt.Sprintf("%s (gateway CPU %s per call)", dur(p50), dur(perCall(gw1-gw0, s.calls))), "", none)
		case "go-plugin":
			b.tbl.add("no-op go-plugin interceptor, 1 session: p50", fmt.Sprintf("%s (+%s; gateway CPU %s, plugin host %s, plugin %s per call)",
				dur(p50), dur(p50-base), dur(perCall(gw1-gw0, s.calls)), dur(perCall(host1-host0, s.calls)), dur(perCall(pl1-pl0, s.calls))), "", none)
		case "exec":
			b.tbl.add("no-op exec interceptor, 1 session: p50", fmt.Sprintf("%s (+%s; gateway CPU %s, hook processes %s per call)",
				dur(p50), dur(p50-base), dur(perCall(gw1-gw0, s.calls)), dur(perCall(kids1-kids0, s.calls))), "", none)
		}
		if err := b.stop(bx); err != nil {
			return err
		}
	}
	return nil
}

// childCPUTime is the CPU time (user+sys) of pid's reaped children.
func childCPUTime(pid int) (time.Duration, error) {
	f, err := statFields(pid)
	if err != nil || len(f) < 15 {
		return 0, fmt.Errorf("child cpu time of %d: %v", pid, err)
	}
	var ticks int64
	for _, s := range f[13:15] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}
