'use strict';
// Microsoft's etcd3 1.1.2 (npm) on the etcd store.
//
//   node etcd3.js election  Election/Campaign as the library's documented example shows
//                           (the Election class docs, also in its CHANGELOG for 1.1.0):
//                           campaign(value); on 'elected' start the work; on 'error' stop the
//                           work and campaign again after a delay (the example's 5 s; the
//                           contract's retry interval when the harness sets one).
//   node etcd3.js lock      client.lock(name).ttl(ttl).do(fn) as the Lock docs show: fn is the
//                           leader's work; the lock is released when fn returns. An
//                           EtcdLockFailedError (held by another) is retried every retry interval.
//
// Token: the create revision of the candidate's key. Election: Campaign keeps it in its
// (TypeScript-private) keyRevision, set from the transaction that created the key; reading it
// costs no store call, where the public getCampaignKey() + get() would add a read the docs do
// not ask for. Lock: the lock key's create_revision, read once with a get after acquire()
// (Lock keeps no revision at all).

// The contract helper first: it installs the SIGTERM handler (PID 1 ignores a signal that
// comes before), and loading the library takes seconds on a loaded host.
const sb = require('./splitbrain');
const { Etcd3 } = require('etcd3');

const variant = process.argv[2];
if (variant !== 'election' && variant !== 'lock') {
  sb.log(`usage: etcd3.js election|lock (got ${variant})`);
  sb.exit(64);
}
const cfg = sb.config();
if (cfg.store !== 'etcd') {
  sb.log(`etcd3.js runs on SPLITBRAIN_STORE=etcd, not ${cfg.store}`);
  sb.exit(64);
}
// etcd leases are whole seconds (the library refuses less than 1).
const ttlSec = Math.max(1, Math.ceil(cfg.ttlMs / 1000));
const retry = cfg.retryMs || (variant === 'election' ? 5000 : 50);
// R16: etcd3 puts no deadline on a call by default (and ignores its documented dialTimeout),
// and its default global policy tries a recoverable call 3 times: a deadline of TTL/4 per
// attempt keeps a call below the TTL. Streams (watch, lease keepalive) have none.
const callDeadline = Math.max(Math.round((ttlSec * 1000) / 4), 100);

const client = new Etcd3({
  hosts: cfg.endpoints.map((ep) => 'http://' + ep),
  defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + callDeadline }),
});

const name = `splitbrain-${cfg.election}`;
let work = null; // { ac, done } while leading
const campaigns = new Set();

// ---- election: the documented example, runCampaign / doSomeWork / stopDoingWork ----

function runCampaign() {
  if (sb.isStopped()) return;
  sb.campaigning();
  const callT = sb.now();
  const campaign = client.election(name, ttlSec).campaign(cfg.node);
  campaigns.add(campaign);
  // diagnostics only (stderr): the key this campaign waits behind, for reading a run's log
  campaign.on('_isWaiting', () => sb.log(`campaign key revision ${campaign.keyRevision}: waiting`));
  campaign.on('elected', () => doSomeWork(campaign, callT));
  campaign.on('error', (err) => {
    sb.error(`campaign: ${err.message}`);
    stopDoingWork(`campaign error: ${err.message}`);
    setTimeout(runCampaign, retry);
  });
}

function doSomeWork(campaign, callT) {
  if (work) return; // already working
  const token = campaign.keyRevision;
  if (!sb.elected(token, callT)) {
    campaign.resign().catch(() => {}); // SIGTERM came first (R10)
    return;
  }
  const ac = new AbortController();
  work = { ac };
  work.done = sb.lead(token, () => true, ac.signal).then((reason) => {
    work = null;
    sb.steppedDown(reason);
    if (reason.startsWith('fenced')) {
      // the contract's step-down on a 409; give the election up and campaign again
      campaigns.delete(campaign);
      campaign.resign().catch((e) => sb.log(`resign: ${e.message}`)).then(() => setTimeout(runCampaign, retry));
    }
  });
}

function stopDoingWork(reason) {
  if (work) work.ac.abort(reason);
}

// ---- lock: client.lock(name).ttl(ttl).do(fn) ----

async function lockLoop() {
  while (!sb.isStopped()) {
    sb.campaigning();
    for (;;) {
      if (sb.isStopped()) return;
      const callT = sb.now();
      const lock = client.lock(name).ttl(ttlSec);
      try {
        await lock.do(async () => {
          const key = `${name}`;
          const res = await client.get(key).exec();
          const kv = res.kvs[0];
          if (!kv) throw new Error('lock key not found after acquire');
          const token = kv.create_revision;
          if (!sb.elected(token, callT)) return;
          const ac = new AbortController();
          work = { ac };
          const reason = await sb.lead(token, () => true, ac.signal);
          work = null;
          sb.steppedDown(reason);
        });
        break; // released: campaign again
      } catch (e) {
        if (e.constructor.name !== 'EtcdLockFailedError') sb.log(`lock: ${e.message}`);
        await sb.sleep(retry);
      }
    }
  }
}

// ---- SIGTERM: stop the work, resign through the library, exit ----

sb.onStop(async () => {
  if (work) {
    work.ac.abort('sigterm');
    await work.done;
  }
  await Promise.all([...campaigns].map((c) => c.resign().catch(() => {})));
  if (variant === 'election') {
    client.close();
    sb.exit(0);
  }
});

// setImmediate: a SIGTERM that came while the modules loaded is handled first.
setImmediate(() => {
  if (variant === 'election') {
    runCampaign();
  } else {
    lockLoop().then(() => { client.close(); sb.exit(0); }, (e) => { sb.log(`etcd3.js: ${e.stack || e}`); sb.exit(1); });
  }
});
