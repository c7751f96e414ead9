'use strict';
// The candidate contract (docs/candidates.md) for Node library adapters: environment, event
// lines, the leader's write loop and SIGTERM. No election logic and no lease check: the
// adapter learns of loss only from its library and tells lead() through stillLeader/signal.
// CommonJS, Node 18, no dependencies.

// SIGTERM/SIGINT handlers go in before anything is loaded: PID 1 without a handler ignores
// the signal, and on a loaded host loading the library takes seconds. Node runs the handler
// only when the event loop turns (after the adapter's synchronous requires); until the
// adapter first campaigns there is nothing to resign, so a signal then exits 0 at once.
let stopped = false;
let campaigned = false;
process.on('SIGTERM', () => stopHandler('SIGTERM'));
process.on('SIGINT', () => stopHandler('SIGINT'));

const http = require('http');
const crypto = require('crypto');

const exitBound = 4000; // R11: the harness SIGKILLs 5 s after SIGTERM; a loaded host is slow to exit

// ---- environment (§1) ----

const units = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, ms: 1, s: 1e3, m: 6e4, h: 3.6e6 };

// parseDuration turns a Go duration (2s, 50ms, 1m30s) into milliseconds; NaN when malformed.
function parseDuration(text) {
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/gy;
  let ms = 0;
  let m;
  let end = 0;
  while ((m = re.exec(text)) !== null) {
    ms += parseFloat(m[1]) * units[m[2]];
    end = re.lastIndex;
  }
  return text !== '' && end === text.length ? ms : NaN;
}

function usage(msg) {
  process.stderr.write(`splitbrain.js: ${msg}\n`);
  process.exit(64);
}

// config reads the SPLITBRAIN_* environment; every problem is reported at once (R15, exit 64).
// Durations are in ms; renewMs and retryMs are null when the harness did not set them (the
// adapter then uses its library's own default).
function config() {
  const env = process.env;
  const problems = [];
  const get = (name, def) => (env[name] ? env[name] : def);
  const need = (name) => {
    if (!env[name]) problems.push(`${name} is not set`);
    return env[name] || '';
  };
  const dur = (name, def) => {
    const v = get(name, def);
    if (v === undefined) return null;
    const ms = parseDuration(v);
    if (!(ms > 0)) problems.push(`${name}=${v} is not a positive Go duration such as 2s or 50ms`);
    return ms;
  };
  const contract = get('SPLITBRAIN_CONTRACT', '1');
  if (contract !== '1') problems.push(`SPLITBRAIN_CONTRACT=${contract}: this adapter speaks contract version 1 only`);
  const cfg = {
    node: need('SPLITBRAIN_NODE_ID'),
    store: need('SPLITBRAIN_STORE'),
    resourceUrl: need('SPLITBRAIN_RESOURCE_URL').replace(/\/+$/, ''),
    endpoints: [],
    ttlMs: dur('SPLITBRAIN_LEASE_TTL', '2s'),
    intervalMs: dur('SPLITBRAIN_WRITE_INTERVAL', '50ms'),
    renewMs: dur('SPLITBRAIN_RENEW_INTERVAL'),
    retryMs: dur('SPLITBRAIN_RETRY_INTERVAL'),
    election: get('SPLITBRAIN_ELECTION', 'splitbrain'),
    // The work gap between a check and its write; set only when a row or check asks for it.
    leaderWorkMs: 0,
  };
  const work = get('SPLITBRAIN_LEADER_WORK');
  if (work !== undefined) {
    cfg.leaderWorkMs = parseDuration(work);
    if (!(cfg.leaderWorkMs >= 0)) problems.push(`SPLITBRAIN_LEADER_WORK=${work} is not a Go duration such as 1s or 0s`);
  }
  if (cfg.store !== 'none') cfg.endpoints = need('SPLITBRAIN_STORE_ENDPOINTS').split(',').filter(Boolean);
  if (problems.length) usage(problems.join('; '));
  return cfg;
}

// ---- events (§2) ----

// now is CLOCK_MONOTONIC in ns (libuv's hrtime on Linux), never the faked wall clock.
const now = () => process.hrtime.bigint();

// emit prints one event line. stdout is synchronous for pipes and files on Linux and this
// runs to completion before any other callback, so t is read "inside the output lock".
function emit(kind, fields) {
  let line = '{"t":' + now() + ',"kind":' + JSON.stringify(kind);
  for (const [k, v] of Object.entries(fields || {})) {
    if (v === undefined) continue;
    line += ',' + JSON.stringify(k) + ':' + (typeof v === 'bigint' ? v.toString() : JSON.stringify(v));
  }
  process.stdout.write(line + '}\n');
}

// reason text: non-empty, at most 2048 bytes, one line.
function clip(reason) {
  let s = String(reason || 'unknown').replace(/\s+/g, ' ').trim() || 'unknown';
  while (Buffer.byteLength(s) > 2048) s = s.slice(0, s.length - 16);
  return s;
}

// Tokens may come as numbers, strings (int64 revisions) or BigInts; they print as integers.
const asToken = (token) => BigInt(token);

let leading = false;
function campaigning() {
  campaigned = true;
  emit('campaigning');
}
// elected announces a term unless SIGTERM came first (R10): then it prints nothing and
// returns false, and the adapter gives the lock back without announcing it.
function elected(token, callT) {
  if (stopped) return false;
  leading = true;
  emit('elected', { token: asToken(token), call_t: callT });
  return true;
}
function steppedDown(reason) {
  leading = false;
  emit('stepped-down', { reason: clip(reason) });
}
const error = (reason) => emit('error', { reason: clip(reason) });
const log = (...args) => process.stderr.write(args.join(' ') + '\n');

// ---- writes (§3) ----

let cfgCache = null;
const cfgOnce = () => cfgCache || (cfgCache = config());
// write_id: node, a random run-unique prefix (R7: unique across restarts), a counter.
const writePrefix = crypto.randomBytes(6).toString('hex');
let seq = 0;
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
// The library helpers' write timeout: 2 s, the top of the Go runtime's clamp (why:
// docs/libraries.md, "How a library runs"). No fault cuts the harness's resource off, so only a
// loaded host answers later; a write given up sooner could land after the job had released the
// lock and a next tenure had written.
const WRITE_TIMEOUT_MS = 2000;

// write POSTs one write with token, prints its write event, and resolves its result:
// "accepted" (200), "rejected" (409 or another 4xx) or "unknown" (no answer in time).
function write(token) {
  const cfg = cfgOnce();
  const tok = asToken(token);
  const writeId = `${cfg.node}-${writePrefix}-${++seq}`;
  const body = `{"node":${JSON.stringify(cfg.node)},"token":${tok},"write_id":${JSON.stringify(writeId)}}`;
  return new Promise((resolve) => {
    let done = false;
    let status = 0;
    let answer = '';
    const callT = now();
    const finish = (result) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      emit('write', { token: tok, write_id: writeId, call_t: callT, result });
      resolve({ result, status, body: answer });
    };
    const req = http.request(cfg.resourceUrl + '/write', {
      method: 'POST', agent,
      headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
    }, (res) => {
      status = res.statusCode;
      res.setEncoding('utf8');
      res.on('data', (d) => { if (answer.length < 4096) answer += d; });
      res.on('end', () => finish(status === 200 ? 'accepted' : status >= 400 && status < 500 ? 'rejected' : 'unknown'));
      res.on('error', () => finish('unknown'));
    });
    const timer = setTimeout(() => { finish('unknown'); req.destroy(); }, WRITE_TIMEOUT_MS);
    req.on('error', () => finish('unknown'));
    req.end(body);
  });
}

// ---- stopping (§4) ----

const stopWaiters = new Set();
const onStopFns = [];

// sleep resolves after ms, or at once on SIGTERM or when signal aborts.
function sleep(ms, signal) {
  return new Promise((resolve) => {
    if (stopped || (signal && signal.aborted)) return resolve();
    const wake = () => {
      clearTimeout(timer);
      stopWaiters.delete(wake);
      if (signal) signal.removeEventListener('abort', wake);
      resolve();
    };
    const timer = setTimeout(wake, ms);
    stopWaiters.add(wake);
    if (signal) signal.addEventListener('abort', wake, { once: true });
  });
}

function stopHandler(sig) {
  if (stopped) {
    process.exit(0); // a second signal: leave now
  }
  stopped = true;
  log(`${sig}: stopping`);
  if (!campaigned) process.exit(0);
  setTimeout(() => {
    log(`still running ${exitBound} ms after ${sig}: exiting`);
    process.exit(0);
  }, exitBound).unref();
  for (const wake of [...stopWaiters]) wake();
  for (const fn of onStopFns) {
    try { fn(); } catch (e) { log(`on stop: ${e}`); }
  }
}
// onStop registers fn to run at SIGTERM (e.g. wake a library wait); isStopped tells whether it came.
const onStop = (fn) => onStopFns.push(fn);
const isStopped = () => stopped;

// lead writes with token every write interval while stillLeader() returns true, SIGTERM has
// not come and signal (an AbortSignal, optional) has not aborted. It returns why it ended:
// "sigterm", "fenced: ..." on a 409, signal.reason when aborted, or stillLeader()'s answer
// when that is a string. The caller prints steppedDown(reason) and releases.
async function lead(token, stillLeader, signal) {
  const cfg = cfgOnce();
  const why = () => {
    if (stopped) return 'sigterm';
    if (signal && signal.aborted) return String(signal.reason || 'aborted');
    const still = stillLeader ? stillLeader() : true;
    if (still !== true) return typeof still === 'string' ? still : 'the library no longer reports leadership';
    return null;
  };
  for (;;) {
    let reason = why();
    if (reason) return reason;
    if (cfg.leaderWorkMs > 0) {
      // The work gap, as the Go runtime opens it: checked, then working before the send; a
      // fault on=step:leader-work lands here (the zombie window). Nothing is checked again.
      emit('step', { name: 'leader-work' });
      await sleep(cfg.leaderWorkMs, signal);
      if (stopped) return 'sigterm';
    }
    const r = await write(token);
    if (r.result === 'rejected') return `fenced: the resource answered ${r.status} ${r.body.trim()}`;
    await sleep(cfg.intervalMs, signal);
  }
}

// exit ends the process with code (0 after SIGTERM, R11).
function exit(code) {
  process.exit(code === undefined ? 0 : code);
}

module.exports = {
  config, parseDuration, now, emit, campaigning, elected, steppedDown, error, log,
  write, lead, sleep, onStop, isStopped, exit,
  get leading() { return leading; },
};
