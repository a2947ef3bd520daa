#!/usr/bin/env node
// A client built on the official TypeScript SDK v2 (@modelcontextprotocol/client 2.4.0), which speaks both protocol
// eras, for the Go e2e tests: it connects in one of the SDK's three version-negotiation modes, runs a list of steps
// and prints one JSON line per step, so a test can see what each era gets through the gateway.
//
// Usage:
//   node v2client.mjs [--mode=legacy|auto|<version>] [--token=<t>] [--timeout=<ms>] [--steps=<json>] <url>
//   node v2client.mjs [--mode=...] [--timeout=<ms>] [--steps=<json>] -- <command> [args...]
//
//   --mode     legacy (the SDK's default: the 2025 initialize handshake, no probe), auto (probe server/discover,
//              fall back to initialize), or a version to pin (e.g. 2026-07-28: no fallback). Default legacy.
//   --token    sent as "Authorization: Bearer <t>" over HTTP.
//   --timeout  per-request timeout in ms (default 60000).
//   --steps    a JSON array of steps (default [{"op":"tools/list"}]):
//                {"op":"tools/list"}                            -> "tools": [names]
//                {"op":"tools/call","name":n,"arguments":{..},"progress":true?,"abortOnProgress":true?}
//                                                               -> "result", "progress": [params...] with progress;
//                                                                  abortOnProgress: the call is aborted (the SDK
//                                                                  cancels it) when its first progress arrives
//                {"op":"prompts/list"}                          -> "prompts": [names]
//                {"op":"prompts/get","name":n,"arguments":{..}} -> "result"
//                {"op":"resources/list"}                        -> "resources": [uris]
//                {"op":"resources/templates/list"}              -> "templates": [uriTemplates]
//                {"op":"resources/read","uri":u}                -> "result"
//                {"op":"completion/complete","ref":{..},"argument":{..}} -> "result"
//                {"op":"logging/setLevel","level":l}            -> 2025 era: logging/setLevel; 2026 era: the level
//                                                                  rides in every later request's _meta
//                {"op":"subscribe","uri":u}                     -> 2025 era: resources/subscribe; 2026 era:
//                                                                  subscriptions/listen for u
//                {"op":"listen","filter":{..}}                  -> 2026 era: subscriptions/listen with the filter
//                                                                  (toolsListChanged, resourceSubscriptions, ...);
//                                                                  "honored": the acknowledged filter
//                {"op":"unlisten"}                              -> closes every open listen (subscribe's too)
//                {"op":"wait","method":m,"timeout":ms}          -> waits until a notification m has arrived (since
//                                                                  the start or the previous wait)
//                {"op":"waitFile","path":p,"text":s,"timeout":ms} -> waits until the file p holds s (a server's
//                                                                  log line: what the server did, seen while this
//                                                                  client, and a stdio gateway it runs, still live)
//   <url>      a streamable HTTP endpoint; after --, a command that serves stdio (StdioClientTransport: in auto
//              mode the SDK probes a short-lived sibling process of the same command first).
//
// Output, one JSON line each:
//   {"op":"connect","era":"legacy"|"modern","protocolVersion":v,"server":{name,version}}
//   {"op":<step op>, ...its fields, "inputRequests":[{"method":m,"mode":..}], "notifications":[{method,params}]}
// where inputRequests are the server's requests for input this client answered during the step (sampling,
// elicitation, roots, whichever era carried them) and notifications are the log and resource notifications that
// arrived during the step (list changes too). A failed step prints {"op":..., "error":{"message","code","data"}}
// and the run goes on. Exit code 0 when every step succeeded, 1 otherwise (2 on bad usage).
//
// The client declares sampling, roots and elicitation (form and URL) and answers them the same way each time:
// elicitation form -> accept {"name":"v2client"}; URL elicitation -> accept; sampling -> a text "sampled by
// v2client"; roots -> [file:///tmp/v2client-root].

import { readFile } from 'node:fs/promises';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const LOG_LEVEL_META_KEY = 'io.modelcontextprotocol/logLevel';

function usage(msg) {
    process.stderr.write(`v2client: ${msg}\n`);
    process.exit(2);
}

function parseArgs(argv) {
    const opts = { mode: 'legacy', token: '', timeout: 60000, steps: [{ op: 'tools/list' }], url: undefined, command: undefined };
    let i = 0;
    for (; i < argv.length; i++) {
        const arg = argv[i];
        if (arg === '--') {
            opts.command = argv.slice(i + 1);
            if (opts.command.length === 0) usage('-- needs a command');
            break;
        } else if (arg.startsWith('--mode=')) {
            opts.mode = arg.slice('--mode='.length);
        } else if (arg.startsWith('--token=')) {
            opts.token = arg.slice('--token='.length);
        } else if (arg.startsWith('--timeout=')) {
            opts.timeout = Number(arg.slice('--timeout='.length));
            if (!Number.isInteger(opts.timeout) || opts.timeout <= 0) usage(`bad ${arg}: want a positive integer of milliseconds`);
        } else if (arg.startsWith('--steps=')) {
            try {
                opts.steps = JSON.parse(arg.slice('--steps='.length));
            } catch (err) {
                usage(`--steps: ${err.message}`);
            }
            if (!Array.isArray(opts.steps)) usage('--steps: want a JSON array');
        } else if (arg.startsWith('--')) {
            usage(`unknown flag ${arg}`);
        } else if (opts.url === undefined) {
            opts.url = arg;
        } else {
            usage(`unexpected argument ${arg}`);
        }
    }
    if ((opts.url === undefined) === (opts.command === undefined)) usage('want a URL, or -- and a command');
    return opts;
}

function negotiation(mode) {
    if (mode === 'legacy' || mode === 'auto') return { mode };
    if (!/^\d{4}-\d\d-\d\d$/.test(mode)) usage(`bad --mode ${mode}: want legacy, auto or a version`);
    return { mode: { pin: mode } };
}

// Writes one line and resolves once it is flushed, so process.exit cannot truncate piped output.
function writeLine(obj) {
    return new Promise(resolve => process.stdout.write(JSON.stringify(obj) + '\n', () => resolve()));
}

function errorOf(err) {
    const out = { message: err instanceof Error ? err.message : String(err) };
    if (err && typeof err === 'object') {
        if (err.code !== undefined) out.code = err.code;
        if (err.data !== undefined) out.data = err.data;
    }
    return out;
}

async function run(opts) {
    const inputs = []; // input requests answered during the current step
    const notes = []; // notifications that arrived during the current step
    let unwaited = []; // methods of the notifications since the previous wait step
    const waiters = []; // {method, resolve}
    let logLevel; // the 2026 era's per-request log level
    let abortCall; // aborts the current call at its first progress (abortOnProgress)

    const client = new Client(
        { name: 'v2client', version: '2.4.0' },
        {
            versionNegotiation: negotiation(opts.mode),
            capabilities: { sampling: {}, roots: { listChanged: true }, elicitation: { form: {}, url: {} } }
        }
    );
    client.setRequestHandler('elicitation/create', async request => {
        const mode = request.params.mode ?? 'form';
        inputs.push({ method: 'elicitation/create', mode, message: request.params.message });
        return mode === 'url' ? { action: 'accept' } : { action: 'accept', content: { name: 'v2client' } };
    });
    client.setRequestHandler('sampling/createMessage', async request => {
        inputs.push({ method: 'sampling/createMessage', messages: request.params.messages.length });
        return { role: 'assistant', model: 'v2client-model', content: { type: 'text', text: 'sampled by v2client' } };
    });
    client.setRequestHandler('roots/list', async () => {
        inputs.push({ method: 'roots/list' });
        return { roots: [{ uri: 'file:///tmp/v2client-root', name: 'v2client' }] };
    });
    const note = method => notification => {
        notes.push({ method, params: notification.params });
        if (method === 'notifications/progress' && abortCall !== undefined) {
            abortCall();
            abortCall = undefined;
        }
        unwaited.push(method);
        for (const w of waiters.splice(0)) {
            if (w.method === method) w.resolve();
            else waiters.push(w);
        }
    };
    client.setNotificationHandler('notifications/message', note('notifications/message'));
    client.setNotificationHandler('notifications/resources/updated', note('notifications/resources/updated'));
    for (const kind of ['tools', 'prompts', 'resources']) {
        const method = `notifications/${kind}/list_changed`;
        client.setNotificationHandler(method, note(method));
    }
    // The SDK's own progress dispatch runs after the call's result when both arrive in one read (it drops the
    // notifications as "unknown token"): take them here instead, and let them settle before a step is printed.
    client.setNotificationHandler('notifications/progress', note('notifications/progress'));

    let transport;
    if (opts.url !== undefined) {
        const headers = opts.token === '' ? {} : { Authorization: `Bearer ${opts.token}` };
        transport = new StreamableHTTPClientTransport(new URL(opts.url), { requestInit: { headers } });
    } else {
        transport = new StdioClientTransport({ command: opts.command[0], args: opts.command.slice(1), stderr: 'inherit' });
    }
    const requestOptions = { timeout: opts.timeout };

    try {
        await client.connect(transport, requestOptions);
    } catch (err) {
        await writeLine({ op: 'connect', error: errorOf(err) });
        await client.close().catch(() => {});
        return false;
    }
    const modern = client.getProtocolEra() === 'modern';
    await writeLine({
        op: 'connect',
        era: client.getProtocolEra(),
        protocolVersion: client.getNegotiatedProtocolVersion(),
        server: client.getServerVersion()
    });

    // withMeta adds the 2026 era's log level to a request's params.
    const withMeta = params => (modern && logLevel !== undefined ? { ...params, _meta: { ...params._meta, [LOG_LEVEL_META_KEY]: logLevel } } : params);
    const subscriptions = [];
    let ok = true;
    try {
        for (const step of opts.steps) {
            inputs.length = 0;
            notes.length = 0;
            const out = { op: step.op };
            try {
                switch (step.op) {
                    case 'tools/list':
                        out.tools = (await client.listTools(undefined, requestOptions)).tools.map(t => t.name);
                        break;
                    case 'tools/call': {
                        const callOptions = { ...requestOptions };
                        if (step.progress || step.abortOnProgress) {
                            // Makes the SDK send a progressToken; the notifications are taken above.
                            callOptions.onprogress = () => {};
                        }
                        if (step.abortOnProgress) {
                            const controller = new AbortController();
                            callOptions.signal = controller.signal;
                            abortCall = () => controller.abort(new Error('aborted at the first progress'));
                        }
                        out.name = step.name;
                        try {
                            out.result = await client.callTool(withMeta({ name: step.name, arguments: step.arguments ?? {} }), callOptions);
                        } finally {
                            abortCall = undefined;
                            if (step.abortOnProgress) {
                                await new Promise(resolve => setImmediate(resolve));
                                out.progress = notes.filter(n => n.method === 'notifications/progress').map(n => n.params);
                            }
                        }
                        if (step.progress) {
                            await new Promise(resolve => setImmediate(resolve));
                            out.progress = notes.filter(n => n.method === 'notifications/progress').map(n => n.params);
                        }
                        break;
                    }
                    case 'prompts/list':
                        out.prompts = (await client.listPrompts(undefined, requestOptions)).prompts.map(p => p.name);
                        break;
                    case 'prompts/get':
                        out.result = await client.getPrompt(withMeta({ name: step.name, arguments: step.arguments ?? {} }), requestOptions);
                        break;
                    case 'resources/list':
                        out.resources = (await client.listResources(undefined, requestOptions)).resources.map(r => r.uri);
                        break;
                    case 'resources/templates/list':
                        out.templates = (await client.listResourceTemplates(undefined, requestOptions)).resourceTemplates.map(r => r.uriTemplate);
                        break;
                    case 'resources/read':
                        out.result = await client.readResource(withMeta({ uri: step.uri }), { ...requestOptions, cacheMode: 'bypass' });
                        break;
                    case 'completion/complete':
                        out.result = await client.complete(withMeta({ ref: step.ref, argument: step.argument }), requestOptions);
                        break;
                    case 'logging/setLevel':
                        if (modern) logLevel = step.level;
                        else await client.setLoggingLevel(step.level, requestOptions);
                        break;
                    case 'subscribe':
                        if (modern) {
                            const sub = await client.listen({ resourceSubscriptions: [step.uri] }, requestOptions);
                            subscriptions.push(sub);
                            out.honored = sub.honoredFilter;
                        } else {
                            await client.subscribeResource({ uri: step.uri }, requestOptions);
                        }
                        break;
                    case 'listen': {
                        const sub = await client.listen(step.filter ?? {}, requestOptions);
                        subscriptions.push(sub);
                        out.honored = sub.honoredFilter;
                        break;
                    }
                    case 'unlisten':
                        for (const sub of subscriptions.splice(0)) await sub.close();
                        break;
                    case 'wait': {
                        const timeout = step.timeout ?? 10000;
                        if (!unwaited.includes(step.method)) {
                            await new Promise((resolve, reject) => {
                                const timer = setTimeout(() => reject(new Error(`no ${step.method} within ${timeout} ms`)), timeout);
                                waiters.push({ method: step.method, resolve: () => (clearTimeout(timer), resolve()) });
                            });
                        }
                        unwaited = [];
                        break;
                    }
                    case 'waitFile': {
                        const deadline = Date.now() + (step.timeout ?? 10000);
                        for (;;) {
                            const text = await readFile(step.path, 'utf8').catch(() => '');
                            if (text.includes(step.text)) break;
                            if (Date.now() > deadline) throw new Error(`${step.path} did not get ${JSON.stringify(step.text)} within ${step.timeout ?? 10000} ms`);
                            await new Promise(resolve => setTimeout(resolve, 20));
                        }
                        break;
                    }
                    default:
                        throw new Error(`unknown step op ${JSON.stringify(step.op)}`);
                }
            } catch (err) {
                ok = false;
                out.error = errorOf(err);
            }
            if (inputs.length > 0) out.inputRequests = [...inputs];
            await new Promise(resolve => setImmediate(resolve));
            const shown = notes.filter(n => n.method !== 'notifications/progress');
            if (shown.length > 0) out.notifications = shown;
            await writeLine(out);
        }
    } finally {
        for (const sub of subscriptions) await sub.close().catch(() => {});
        if (opts.url !== undefined && !modern) {
            // End the server-side session (DELETE) so the server does not keep it until its idle timeout.
            await transport.terminateSession().catch(() => {});
        }
        await client.close().catch(() => {});
    }
    return ok;
}

try {
    const ok = await run(parseArgs(process.argv.slice(2)));
    process.exit(ok ? 0 : 1);
} catch (err) {
    process.stderr.write(`v2client: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
}
