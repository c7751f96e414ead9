'use strict';
// node-redlock 4.2.0 over N independent Redis servers (store redis-multi), one ioredis client
// per server, configured as the README's Configuration section shows.
//
//   node redlock.js shipped  the README's main example (Usage, promise style, "Locking &
//                            Unlocking"): lock(resource, ttl), do the job, unlock. The job is
//                            the leader's writes for the renew interval (TTL/3 by default),
//                            timed by a timer from when lock() resolved: a job kept well
//                            inside the ttl, as the README's comment on ttl asks. Nothing
//                            else tells the leader it lost the lock.
//   node redlock.js extend   the README's "Locking and Extending": extend(ttl) every renew
//                            interval "as long as you never let it expire", and stop at the
//                            first extend that rejects.
//
// Redlock gives no fencing token. The label token is lock.expiration of the acquisition
// (the winning attempt's start on this process's wall clock + ttl - drift, Unix ms): the
// library's own number, growing with each acquisition while the candidates' wall clocks agree.

// The contract helper first: it installs the SIGTERM handler (PID 1 ignores a signal that
// comes before), and loading the library takes seconds on a loaded host.
const sb = require('./splitbrain');
const Redlock = require('redlock');
const Redis = require('ioredis');

const variant = process.argv[2];
if (variant !== 'shipped' && variant !== 'extend') {
  sb.log(`usage: redlock.js shipped|extend (got ${variant})`);
  sb.exit(64);
}
const cfg = sb.config();
if (cfg.store !== 'redis-multi') {
  sb.log(`redlock.js runs on SPLITBRAIN_STORE=redis-multi, not ${cfg.store}`);
  sb.exit(64);
}
const ttl = Math.round(cfg.ttlMs);
const renew = cfg.renewMs || ttl / 3;
// R16: ioredis waits for ever by default (no commandTimeout, offline queue on, 20 retries per
// command across reconnects, 10 s connect timeout), and Redlock 4.2.0 decides an attempt only
// when every server has answered: one silent server would hold every lock and extend.
const callTimeout = Math.max(Math.round(renew), 100);

const clients = cfg.endpoints.map((ep) => {
  const i = ep.lastIndexOf(':');
  const c = new Redis({
    host: ep.slice(0, i), port: Number(ep.slice(i + 1)),
    connectTimeout: callTimeout, commandTimeout: callTimeout,
    maxRetriesPerRequest: 0, enableOfflineQueue: false,
  });
  let last = '';
  c.on('error', (e) => { // reconnects on its own, resolving the name each time (R12)
    if (e.message !== last) sb.log(`redis ${ep}: ${(last = e.message)}`);
  });
  return c;
});

// The README's configuration, values included.
const redlock = new Redlock(clients, { driftFactor: 0.01, retryCount: 10, retryDelay: 200, retryJitter: 200 });
let lastClientError = '';
redlock.on('clientError', (e) => {
  if (e.message !== lastClientError) sb.log(`redlock clientError: ${(lastClientError = e.message)}`);
});

const resource = `locks:splitbrain:${cfg.election}`;

// lockOrStop waits for lock() but stops waiting 1 s after SIGTERM (lock() retries inside and
// cannot be cancelled). main gives back a lock granted after the signal without announcing
// it (R10).
const stopWait = new Promise((resolve) => sb.onStop(() => setTimeout(() => resolve(null), 1000)));
function lockOrStop() {
  return Promise.race([redlock.lock(resource, ttl), stopWait]);
}

async function term(lock, token) {
  const ac = new AbortController();
  let timer;
  if (variant === 'shipped') {
    // the job: the leader's work for the renew interval, then unlock
    timer = setTimeout(() => ac.abort('job done: unlocking as the README example does'), renew);
  } else {
    const extend = () => {
      timer = setTimeout(() => {
        lock.extend(ttl).then(() => ac.signal.aborted || extend(), (e) => ac.abort(`extend failed: ${e.message}`));
      }, renew);
    };
    extend();
  }
  const reason = await sb.lead(token, () => true, ac.signal);
  clearTimeout(timer);
  sb.steppedDown(reason);
}

async function main() {
  while (!sb.isStopped()) {
    sb.campaigning();
    let lock = null;
    let callT;
    while (!sb.isStopped() && !lock) {
      callT = sb.now();
      try {
        lock = await lockOrStop();
      } catch (e) {
        // LockError: 11 attempts failed (the README's retryCount 10); try again
        sb.log(`lock: ${e.message}`);
      }
    }
    if (!lock) break;
    const token = lock.expiration;
    if (sb.elected(token, callT)) await term(lock, token);
    await lock.unlock().catch((e) => sb.log(`unlock: ${e.message}`));
  }
  sb.exit(0);
}

// setImmediate: a SIGTERM that came while the modules loaded is handled first.
setImmediate(() => main().catch((e) => {
  sb.log(`redlock.js: ${e.stack || e}`);
  sb.exit(1);
}));
