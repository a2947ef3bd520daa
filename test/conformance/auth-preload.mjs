// Preload for the conformance CLI (node --import ./auth-preload.mjs): adds
// "Authorization: Bearer $MCP_TOKEN" to every HTTP request the process makes.
//
// Why: the CLI has no flag for headers, and the gateway rejects requests without
// the token. The scenarios reach the server two ways: the TypeScript SDK client
// through global fetch, and the dns-rebinding scenario through undici.request
// (the npm undici package) directly. Both end in undici's global dispatcher,
// which lives on globalThis under Symbol.for('undici.globalDispatcher.1') and is
// shared by Node's built-in fetch and the npm package, so replacing it covers
// both. A header the caller set itself is left alone.
import { getGlobalDispatcher, setGlobalDispatcher } from 'undici';

const token = process.env.MCP_TOKEN;
if (!token) {
  console.error('auth-preload: MCP_TOKEN is not set');
  process.exit(2);
}
const auth = `Bearer ${token}`;

// withAuth returns the request headers plus Authorization, in whichever shape
// undici was given them: a plain object, a flat [k, v, k, v] array, an array of
// pairs, or any iterable of pairs (Headers, Map).
function withAuth(headers) {
  if (headers == null) return { authorization: auth };
  let pairs;
  if (Array.isArray(headers)) {
    pairs = [];
    if (headers.length > 0 && Array.isArray(headers[0])) {
      for (const [k, v] of headers) pairs.push([k, v]);
    } else {
      for (let i = 0; i + 1 < headers.length; i += 2) pairs.push([headers[i], headers[i + 1]]);
    }
  } else if (typeof headers[Symbol.iterator] === 'function') {
    pairs = [...headers];
  } else {
    pairs = Object.entries(headers);
  }
  if (!pairs.some(([k]) => String(k).toLowerCase() === 'authorization')) {
    pairs.push(['authorization', auth]);
  }
  // Flat array: the form undici keeps repeated header names in.
  return pairs.flat();
}

setGlobalDispatcher(
  getGlobalDispatcher().compose((dispatch) => (opts, handler) =>
    dispatch({ ...opts, headers: withAuth(opts.headers) }, handler),
  ),
);
