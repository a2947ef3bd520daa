#!/usr/bin/env node
// A real TypeScript SDK client that cancels a call, for the Go e2e tests: does the gateway answer a request the agent
// cancelled? (The spec: the receiver of notifications/cancelled SHOULD NOT respond.)
//
// Usage:
//   node cancel.mjs http <url> <token> [--progress]
//   node cancel.mjs stdio <command> [args...] [--progress]
//
// The client declares no capabilities, so that through the gateway's HTTP endpoint a call without a progress token
// takes the fast path; --progress gives the call a progress token (the SDK's path). It calls the tool "sleep"
// ({"ms": 600000}), prints {"started": true} once the request is sent, and waits for a line "cancel" on stdin (the Go
// test sends it once the server has started sleeping); then it aborts the call, which sends notifications/cancelled,
// and calls "echo" ({"text": "after"}). It prints ONE more JSON line:
//   {"cancelledAnswer": <the response to the cancelled call as received on the wire, or null>, "echo": <result>}
// The echo's round trip through the server comes after the cancellation, so an answer the gateway sends to the
// cancelled call arrives before it. On an error the message goes to stderr and the exit code is 1.

import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { z } from 'zod';

const args = process.argv.slice(2);
const progress = args.includes('--progress');
const [mode, target, ...rest] = args.filter(a => a !== '--progress');

const received = [];
let lastCallId;

let inner;
if (mode === 'http') {
    inner = new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers: { Authorization: `Bearer ${rest[0]}` } } });
} else if (mode === 'stdio') {
    inner = new StdioClientTransport({ command: target, args: rest, stderr: 'inherit' });
} else {
    process.stderr.write('usage: node cancel.mjs http <url> <token> [--progress] | stdio <command> [args...] [--progress]\n');
    process.exit(2);
}

// The transport, recording every message received before the client sees it, and the id of each call sent.
const transport = {
    async start() {
        inner.onmessage = (m, extra) => {
            received.push(m);
            this.onmessage?.(m, extra);
        };
        inner.onclose = () => this.onclose?.();
        inner.onerror = e => this.onerror?.(e);
        return inner.start();
    },
    send(m, o) {
        if (m.method === 'tools/call') lastCallId = m.id;
        return inner.send(m, o);
    },
    close: () => inner.close(),
    get sessionId() { return inner.sessionId; },
    setProtocolVersion: v => inner.setProtocolVersion?.(v),
};

function writeLine(obj) {
    return new Promise(resolve => process.stdout.write(JSON.stringify(obj) + '\n', resolve));
}

const client = new Client({ name: 'mcp-gateway-cancel', version: '1.0.0' }, { capabilities: {} });
const any = z.object({}).passthrough();
try {
    await client.connect(transport);
    const lines = createInterface({ input: process.stdin });
    const cancelAsked = new Promise(resolve => lines.on('line', l => { if (l.trim() === 'cancel') resolve(); }));
    const ac = new AbortController();
    const opts = { signal: ac.signal, timeout: 120000 };
    if (progress) opts.onprogress = () => {};
    const call = client.request({ method: 'tools/call', params: { name: 'sleep', arguments: { ms: 600000 } } }, any, opts)
        .then(() => 'answered', err => String(err?.message ?? err));
    const cancelledId = lastCallId;
    await writeLine({ started: true });
    await cancelAsked;
    ac.abort('the agent cancels');
    await call;
    const echo = await client.request({ method: 'tools/call', params: { name: 'echo', arguments: { text: 'after' } } }, any, { timeout: 30000 });
    const answer = received.find(m => m.id === cancelledId && m.method === undefined) ?? null;
    if (mode === 'http') await inner.terminateSession().catch(() => {});
    await client.close();
    lines.close();
    await writeLine({ cancelledAnswer: answer, echo });
    process.exit(0);
} catch (err) {
    process.stderr.write(`cancel.mjs: ${err?.stack ?? err}\n`);
    process.exit(1);
}
