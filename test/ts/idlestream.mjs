#!/usr/bin/env node
// A real TypeScript SDK client that leaves its standalone GET stream idle, for the Go e2e tests: does the gateway
// keep it open? Node's HTTP client (undici, under fetch) ends a response body that sends nothing for 300 s; here
// that timeout is shortened to <bodyTimeoutMs> so that the test idles seconds, not minutes.
//
// Usage:
//   node idlestream.mjs <url> <token> <idleMs> <bodyTimeoutMs>
//
// It connects (the SDK opens the GET stream after initialize), waits idleMs, then calls the tool "add_tool"
// ({"name": "late"}), whose notifications/tools/list_changed the gateway sends on the GET stream, and waits for
// it. It prints ONE JSON line: {"errors": [<each transport error, e.g. the stream dropped>], "listChanged": true}.
// On a failure the message goes to stderr and the exit code is 1.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const [url, token, idleMs, bodyTimeoutMs] = process.argv.slice(2);
if (!bodyTimeoutMs) {
    process.stderr.write('usage: node idlestream.mjs <url> <token> <idleMs> <bodyTimeoutMs>\n');
    process.exit(2);
}

// Node's fetch keeps its dispatcher (an undici Agent) under this symbol once it has been used; a new Agent of the
// same class with a short bodyTimeout replaces it.
const sym = Symbol.for('undici.globalDispatcher.1');
try { await fetch(new URL('/health', url)); } catch { /* only to create the dispatcher */ }
const Agent = globalThis[sym].constructor;
globalThis[sym] = new Agent({ bodyTimeout: Number(bodyTimeoutMs) });

const errors = [];
try {
    const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
    const client = new Client({ name: 'idle-stream', version: '1' });
    client.onerror = e => errors.push(String(e?.message ?? e));
    let changed;
    const listChanged = new Promise(resolve => { changed = resolve; });
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed());
    await client.connect(transport);
    await new Promise(resolve => setTimeout(resolve, Number(idleMs)));
    await client.callTool({ name: 'add_tool', arguments: { name: 'late' } });
    // Bounded, so that a stream that was lost fails the test rather than hanging it.
    await Promise.race([listChanged, new Promise((_, reject) => setTimeout(
        () => reject(new Error('no notifications/tools/list_changed within 20 s of the call')), 20000))]);
    process.stdout.write(JSON.stringify({ errors, listChanged: true }) + '\n');
    await client.close();
    process.exit(0);
} catch (e) {
    process.stderr.write(`idlestream.mjs: ${e?.stack ?? e}\nerrors: ${JSON.stringify(errors)}\n`);
    process.exit(1);
}
