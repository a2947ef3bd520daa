// Summarizes one run of `conformance server --output-dir DIR` for run.sh.
//
// usage: node summarize.mjs RESULTS_DIR CLI_STDOUT CLI_STDERR [EXPECTED_FAILURES]
//
// The scenarios that ran are read from the CLI's "=== Running scenario: X ==="
// lines, their checks from RESULTS_DIR/server-X-<time>/checks.json. A scenario
// fails when one of its checks has status FAILURE (the CLI's own rule for its
// exit code); one that threw or never finished has no checks.json and fails
// with the error the CLI printed, or "did not finish". One rule is ours, not
// the CLI's: tools-list, resources-list and prompts-list pass in the CLI with
// an empty list, but the fixture publishes tools, resources and prompts, so an
// empty list through the gateway means the list is not forwarded: a failure.
//
// Prints one line per failing scenario with its reason, then
// "conformance: N passed, M failed" (with the 0.2 CLI's --requirements, the
// scenarios it says are not scored are shown but not counted). Exits 1 when a scenario failed that is not
// listed in EXPECTED_FAILURES (one scenario per line, "# reason" comments), 0
// otherwise. Listed scenarios that passed are reported as stale, not failed,
// so that the list can only shrink by an edit, never break CI by improving.
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const [resultsDir, stdoutPath, stderrPath, expectedPath] = process.argv.slice(2);
if (!resultsDir || !stdoutPath || !stderrPath) {
  console.error('usage: node summarize.mjs RESULTS_DIR CLI_STDOUT CLI_STDERR [EXPECTED_FAILURES]');
  process.exit(2);
}

const oneLine = (s, max = 240) => {
  const t = String(s ?? '').replace(/\s+/g, ' ').trim();
  return t.length > max ? `${t.slice(0, max - 3)}...` : t;
};

// expected: scenario -> reason.
const expected = new Map();
if (expectedPath && existsSync(expectedPath)) {
  for (const raw of readFileSync(expectedPath, 'utf8').split('\n')) {
    const hash = raw.indexOf('#');
    const name = (hash >= 0 ? raw.slice(0, hash) : raw).trim();
    if (name) expected.set(name, hash >= 0 ? raw.slice(hash + 1).trim() : '');
  }
}

const stdout = readFileSync(stdoutPath, 'utf8');
const stderr = existsSync(stderrPath) ? readFileSync(stderrPath, 'utf8') : '';
const ran = [...stdout.matchAll(/^=== Running scenario: (\S+) ===$/gm)].map((m) => m[1]);
// A single --scenario run prints no such line: take the scenario from the
// "Running client scenario 'X' against server" line instead.
if (ran.length === 0) {
  for (const m of stdout.matchAll(/^Running client scenario '([^']+)' against server/gm)) ran.push(m[1]);
}

// The 0.2 CLI runs, with --requirements, scenarios that do not count toward
// that revision (extensions, pending) and lists them after "Not scored for
// <revision>:" as "  ✗ name (extension)". Their failures are shown, not
// counted.
const unscored = new Set();
const notScored = stdout.indexOf('\nNot scored for ');
if (notScored >= 0) {
  for (const m of stdout.slice(notScored).matchAll(/^\s+[✓✗]\s+(\S+)\s+\(/gm)) unscored.add(m[1]);
}

const dirs = existsSync(resultsDir) ? readdirSync(resultsDir) : [];
function checksOf(scenario) {
  // server-<scenario>-<ISO time with - for : and .>; scenario names contain
  // dashes too, so match the timestamp shape exactly.
  const re = new RegExp(`^server-${scenario.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-\\d{4}-\\d\\d-\\d\\dT[\\d-]+Z$`);
  const dir = dirs.find((d) => re.test(d));
  // A scenario that threw may leave its directory without checks.json.
  if (!dir || !existsSync(join(resultsDir, dir, 'checks.json'))) return null;
  return JSON.parse(readFileSync(join(resultsDir, dir, 'checks.json'), 'utf8'));
}

function crashReason(scenario) {
  const i = stderr.indexOf(`Failed to run scenario ${scenario}:`);
  if (i < 0) return 'did not finish (no results; see the CLI output)';
  const rest = stderr.slice(i).split('\n').slice(0, 3).join(' ');
  return `scenario threw: ${oneLine(rest.slice(`Failed to run scenario ${scenario}:`.length))}`;
}

// emptyList: the CLI check detail that counts the items of a list scenario.
const emptyList = {
  'tools-list': ['toolCount', 'tools'],
  'resources-list': ['resourceCount', 'resources'],
  'prompts-list': ['promptCount', 'prompts'],
};

let passed = 0;
let unscoredFailed = 0;
const failed = []; // {scenario, reason}
const warnings = []; // {scenario, reason}
for (const scenario of ran) {
  const checks = checksOf(scenario);
  if (checks === null) {
    if (unscored.has(scenario)) {
      unscoredFailed++;
      console.log(`FAIL (unscored) ${scenario}: ${crashReason(scenario)}`);
    } else {
      failed.push({ scenario, reason: crashReason(scenario) });
    }
    continue;
  }
  const describe = (c) => `${c.name}: ${oneLine(c.errorMessage || c.description, 200)}`;
  const bad = checks.filter((c) => c.status === 'FAILURE').map(describe);
  const warn = checks.filter((c) => c.status === 'WARNING');
  if (emptyList[scenario]) {
    const [field, kind] = emptyList[scenario];
    for (const c of checks) {
      if (c.status === 'SUCCESS' && c.details?.[field] === 0) {
        bad.push(`${c.name}: listed 0 ${kind}, the fixture publishes some (run.sh's rule; the CLI passes it)`);
      }
    }
  }
  if (warn.length > 0) warnings.push({ scenario, reason: warn.map(describe).join(' | ') });
  if (unscored.has(scenario)) {
    if (bad.length > 0) {
      unscoredFailed++;
      console.log(`FAIL (unscored) ${scenario}: ${oneLine(bad.join(' | '))}`);
    }
    continue;
  }
  if (bad.length === 0) {
    passed++;
  } else {
    failed.push({ scenario, reason: bad.join(' | ') });
  }
}

const unexpected = failed.filter((f) => !expected.has(f.scenario));
const failedNames = new Set(failed.map((f) => f.scenario));
const stale = [...expected.keys()].filter((s) => ran.includes(s) && !failedNames.has(s));

for (const w of warnings) console.log(`WARN ${w.scenario}: ${w.reason}`);
for (const f of failed) {
  const tag = expected.has(f.scenario) ? 'FAIL (expected)' : 'FAIL';
  console.log(`${tag} ${f.scenario}: ${f.reason}`);
}
for (const s of stale) console.log(`STALE ${s}: passes now; remove it from expected-failures.txt`);
if (ran.length === 0) {
  console.log('no scenario ran (see the CLI output)');
}
const tail = unscored.size > 0 ? ` of ${passed + failed.length} scored; ${unscored.size} unscored ran, ${unscoredFailed} of them failing` : '';
console.log(`conformance: ${passed} passed, ${failed.length} failed${tail}`);
if (unexpected.length > 0) {
  console.log(`unexpected failures (not in ${expectedPath ?? 'the expected failures'}): ${unexpected.map((f) => f.scenario).join(' ')}`);
}
process.exit(unexpected.length > 0 || ran.length === 0 ? 1 : 0);
