#!/usr/bin/env node
// A real TypeScript MCP SDK client, so the Go e2e tests can check the gateway against a client that is not
// built from the Go SDK the gateway itself uses.
//
// Usage:
//   node client.mjs <url> <token> <tool> [json-args] [--progress] [--timeout=<ms>]
//        [--read-resource=<uri>] [--get-prompt=<name> [--prompt-args=<json>]] [--meta=<json>]
//   node client.mjs <url> <token> <tool> [json-args] --expect-401
//
// Normal mode connects with "Authorization: Bearer <token>" (no header when <token> is empty), initializes,
// lists tools (every page), calls <tool> with json-args (default {}), and prints ONE JSON line to stdout:
//   {"tools": ["name", ...], "result": <CallToolResult>}
// With --progress the call carries a progress token and the line also has "progress": [<notification params>...].
// --read-resource adds "resource": <ReadResourceResult>; --get-prompt adds "prompt": <GetPromptResult>.
// A tool result with isError: true is still a result: it is printed and the exit code is 0.
// --meta sets the call's _meta (e.g. {"traceparent": "00-..."}).
// --timeout sets the per-request timeout (SDK default 60000 ms); progress notifications reset it.
//
// --expect-401 connects WITHOUT any Authorization header (the token argument is ignored) and prints
// {"status": 401} with exit code 0 if the server rejected the connection with HTTP 401; anything else
// (success, another status, a network error) exits 1.
//
// On any error the message goes to stderr and the exit code is 1.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';

function parseArgs(argv) {
    const positional = [];
    const flags = { progress: false, expect401: false, timeout: undefined, readResource: undefined, getPrompt: undefined, promptArgs: undefined };
    for (const arg of argv) {
        if (arg === '--progress') {
            flags.progress = true;
        } else if (arg === '--expect-401') {
            flags.expect401 = true;
        } else if (arg.startsWith('--read-resource=')) {
            flags.readResource = arg.slice('--read-resource='.length);
        } else if (arg.startsWith('--get-prompt=')) {
            flags.getPrompt = arg.slice('--get-prompt='.length);
        } else if (arg.startsWith('--meta=')) {
            flags.meta = JSON.parse(arg.slice('--meta='.length));
        } else if (arg.startsWith('--prompt-args=')) {
            flags.promptArgs = JSON.parse(arg.slice('--prompt-args='.length));
        } else if (arg.startsWith('--timeout=')) {
            flags.timeout = Number(arg.slice('--timeout='.length));
            if (!Number.isInteger(flags.timeout) || flags.timeout <= 0) {
                throw new Error(`bad ${arg}: want a positive integer of milliseconds`);
            }
        } else if (arg.startsWith('--')) {
            throw new Error(`unknown flag ${arg}`);
        } else {
            positional.push(arg);
        }
    }
    if (positional.length < 3 || positional.length > 4) {
        throw new Error('usage: node client.mjs <url> <token> <tool> [json-args] [--progress] [--timeout=<ms>] [--expect-401]');
    }
    const [url, token, tool, rawArgs] = positional;
    let args = {};
    if (rawArgs !== undefined) {
        try {
            args = JSON.parse(rawArgs);
        } catch (err) {
            throw new Error(`json-args: ${err.message}`);
        }
        if (args === null || typeof args !== 'object' || Array.isArray(args)) {
            throw new Error('json-args: want a JSON object');
        }
    }
    return { url: new URL(url), token, tool, args, ...flags };
}

// Writes one line and resolves once it is flushed, so process.exit cannot truncate piped output.
function writeLine(stream, text) {
    return new Promise(resolve => stream.write(text + '\n', () => resolve()));
}

async function listAllTools(client, options) {
    const names = [];
    let cursor;
    do {
        const page = await client.listTools(cursor === undefined ? {} : { cursor }, options);
        names.push(...page.tools.map(t => t.name));
        cursor = page.nextCursor;
    } while (cursor !== undefined);
    return names;
}

async function run(opts) {
    const headers = {};
    if (!opts.expect401 && opts.token !== '') {
        headers.Authorization = `Bearer ${opts.token}`;
    }
    const transport = new StreamableHTTPClientTransport(opts.url, { requestInit: { headers } });
    const client = new Client({ name: 'mcp-gateway-ts-harness', version: '0.0.0' });
    const requestOptions = opts.timeout === undefined ? {} : { timeout: opts.timeout };

    if (opts.expect401) {
        try {
            await client.connect(transport, requestOptions);
        } catch (err) {
            if (err instanceof StreamableHTTPError && err.code === 401) {
                return { status: 401 };
            }
            throw err;
        }
        await transport.terminateSession().catch(() => {});
        await client.close();
        throw new Error('expected HTTP 401, but the connection was accepted');
    }

    await client.connect(transport, requestOptions);
    try {
        const tools = await listAllTools(client, requestOptions);
        const progress = [];
        const callOptions = { ...requestOptions };
        if (opts.progress) {
            callOptions.onprogress = p => progress.push(p);
            callOptions.resetTimeoutOnProgress = true;
        }
        const result = await client.callTool({ name: opts.tool, arguments: opts.args, ...(opts.meta ? { _meta: opts.meta } : {}) }, CallToolResultSchema, callOptions);
        const out = { tools, result };
        if (opts.progress) {
            out.progress = progress;
        }
        if (opts.readResource !== undefined) {
            out.resource = await client.readResource({ uri: opts.readResource }, requestOptions);
        }
        if (opts.getPrompt !== undefined) {
            out.prompt = await client.getPrompt({ name: opts.getPrompt, arguments: opts.promptArgs ?? {} }, requestOptions);
        }
        return out;
    } finally {
        // End the server-side session (DELETE) so the gateway does not keep it until its idle timeout.
        await transport.terminateSession().catch(() => {});
        await client.close();
    }
}

try {
    const out = await run(parseArgs(process.argv.slice(2)));
    await writeLine(process.stdout, JSON.stringify(out));
    process.exit(0);
} catch (err) {
    await writeLine(process.stderr, err instanceof Error ? err.message : String(err));
    process.exit(1);
}
