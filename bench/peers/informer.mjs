// informer.mjs — the client-node peer of bench/sync.c: makeInformer over list/watch with a
// trivial handler that puts "namespace/name" on a small deduplicating queue drained by an async
// worker (the shape of a controller). Run by bench/bench.py with `node --expose-gc`.
//
//   node informer.mjs sync  KUBECONFIG RESOURCE
//   node informer.mjs watch KUBECONFIG RESOURCE FROM_RV M
//   node informer.mjs reconcile KUBECONFIG RESOURCE WORKERS
//   node informer.mjs startup KUBECONFIG RESOURCE
//   node informer.mjs burst KUBECONFIG RESOURCE FROM_RV M DELAY_MS
//   node informer.mjs write KUBECONFIG GROUP/VERSION/PLURAL WORKERS N [QPS BURST]
//   node informer.mjs relist KUBECONFIG RESOURCE SERVER_URL
//   node informer.mjs informers KUBECONFIG configmaps N
//
// RESOURCE: "pods", "configmaps" or "GROUP/VERSION/PLURAL" (a custom resource, all namespaces).
// sync: time from start() until the last listed object reached the handler; RSS per object.
// watch: the list's resourceVersion is replaced by FROM_RV, so the watch replays M MODIFIED
// events from the server's history; time from the watch request to the M-th handler call.
// reconcile: WORKERS async workers take keys off the queue and run a no-op async reconcile; time
// from the last listed object reaching the handler until every listed object was reconciled.
// startup: print `ready=1 rss_kb=...` as soon as the informer has synced (the caller times it
// from spawn), then exit.
// burst: as watch (M MODIFIED events replayed from FROM_RV), with one slow worker: each reconcile
// reads the key's object from the informer cache (the resourceVersion it "saw"), then awaits
// DELAY_MS (a timer) before taking the next key. Reports reconciles, the queue's depth max, RSS
// (VmRSS, and VmHWM reset at the first event; no forced GC) and `lost`: keys whose last
// reconcile did not see the cache's final resourceVersion (see bench/sync.c, burst).
// write: bench.py's write-path reconcile (WRITER_SCRIPT): WORKERS async workers; each reconcile
// reads the object from the informer cache and, unless its status already says so, PUTs /status
// (application/json: the cached object without managedFields, status.written = true and
// status.observedGeneration = metadata.generation, guarded by its resourceVersion), retrying a 409
// Conflict on a live re-read (5 attempts, 10 ms doubling, as op.status.update). Time and CPU from
// synced (the last listed object handled) until the N-th PUT answered 200. QPS > 0: every request
// (list, watch, GET, PUT) first takes a token from a bucket of BURST refilled at QPS per second
// (client-go's token bucket; client-node has no client-side limiter).
// relist: sync, then the fault of bench/sync.c's relist (watches stalled, one write the informer
// does not see, history compacted, watches ended, stall lifted; the server's fault API at
// SERVER_URL): the informer re-watches, gets 410 and relists. Time from the fault until the relist
// has replaced the cache; RSS steady before (after gc), peak during (VmHWM reset), after (gc).
// informers: N informers (makeInformer), one per namespace bench-0 … bench-(N-1), each over that
// namespace's ConfigMaps, all started at once (bench.py's informers row; the peer of `luaop run
// --namespace` with one informer per namespace). Prints `informers=N objects=K seconds=S` once
// every informer has listed and handed its listed objects to its handler (S from the first
// start()), then keeps the N watches open until stdin closes, so that the caller can count the
// process's threads, TCP connections and RSS from /proc while they are held.
// Output: one key=value line, like the C programs.
import * as k8s from '@kubernetes/client-node';

import { readFileSync, writeFileSync } from 'node:fs';

const [mode, kcPath, resource, fromRv, mArg, delayArg, burstArg] = process.argv.slice(2);
const kc = new k8s.KubeConfig();
kc.loadFromFile(kcPath);
// The local API server speaks plain HTTP on loopback; client-node accepts http:// only with
// skipTLSVerify set (nothing is verified over plain HTTP anyway).
kc.loadFromOptions({
  clusters: kc.clusters.map((c) => ({ ...c, skipTLSVerify: true })),
  users: kc.users, contexts: kc.contexts, currentContext: kc.currentContext,
});

let path, listFn, co, crd;
if (resource === 'pods' || resource === 'configmaps') {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  path = `/api/v1/${resource}`;
  listFn = resource === 'pods' ? () => core.listPodForAllNamespaces()
                               : () => core.listConfigMapForAllNamespaces();
} else {
  const [group, version, plural] = resource.split('/');
  co = kc.makeApiClient(k8s.CustomObjectsApi);
  crd = { group, version, plural };
  path = `/apis/${group}/${version}/${plural}`;
  listFn = () => co.listClusterCustomObject({ group, version, plural });
}

// The small queue: a set of pending keys plus FIFO order, drained by async workers (or, with no
// workers, by one setImmediate). As client-go's workqueue: a key is queued at most once, and a key
// added while a worker holds it waits until that worker is done (never two workers on one key).
const pending = new Set();
const processing = new Set();
const order = [];
let draining = false;
const workersWanted = mode === 'reconcile' || mode === 'write' ? Number(fromRv) : mode === 'burst' ? 1 : 0;
let depthMax = 0, busy = false;
let idle = [];          // resolvers of workers waiting for a key
let reconciled = 0, reconcileTarget = -1, onReconciled = null;
function enqueue(obj) {
  add(`${obj.metadata.namespace || ''}/${obj.metadata.name}`);
}
function add(key) {
  if (pending.has(key)) return;
  pending.add(key);
  if (processing.has(key)) return;  // queued again when its worker is done
  order.push(key);
  if (order.length > depthMax) depthMax = order.length;
  if (workersWanted) {
    const w = idle.shift();
    if (w) w();
    return;
  }
  if (!draining) {
    draining = true;
    setImmediate(drain);
  }
}
function drain() {
  while (order.length) pending.delete(order.shift());
  draining = false;
}
async function reconcile(key) { return key.length >= 0; }   // the trivial reconcile
// burst: the slow reconcile — read the cached object, then wait DELAY_MS
const seen = new Map();
const delayMs = Number(delayArg);
let inf;
async function slowReconcile(key) {
  const slash = key.indexOf('/');
  const o = inf.get(key.slice(slash + 1), key.slice(0, slash) || undefined);
  if (o) seen.set(key, o.metadata.resourceVersion);
  await new Promise((r) => setTimeout(r, delayMs));
}
// write: the token bucket (QPS > 0) and the status write of bench.py's WRITER_SCRIPT
const qps = Number(delayArg || 0), burstTokens = Number(burstArg || 0);
let tokens = burstTokens, tokensAt = 0;
async function takeToken() {
  if (!(qps > 0)) return;
  // refill since the last take, then reserve the next token; a negative count is the queue of
  // callers ahead, each waiting until its token is due (so they are served in arrival order)
  const t = now();
  tokens = Math.min(burstTokens, tokens + (t - tokensAt) * qps);
  tokensAt = t;
  tokens -= 1;
  if (tokens < 0) await new Promise((r) => setTimeout(r, (-tokens / qps) * 1000));
}
let writesWanted = 0, writesOk = 0, conflicts = 0, reconcileErrors = 0, tWritten = 0, cWritten = 0;
let onWritten = null;
const sleepMs = (ms) => new Promise((r) => setTimeout(r, ms));
async function writeReconcile(key) {
  const slash = key.indexOf('/');
  const namespace = key.slice(0, slash), name = key.slice(slash + 1);
  let base = inf.get(name, namespace || undefined);
  if (!base) return;                       // deleted: done
  const observed = base.metadata.generation;
  let delay = 10;
  for (let attempt = 1; attempt <= 5; attempt++) {
    const st = base.status || {};
    // unchanged: no write (op.status.update compares the status before and after its edit)
    if (st.written === true && (observed === undefined || st.observedGeneration === observed)) return;
    const { managedFields, ...metadata } = base.metadata;
    const body = { ...base, metadata, status: { ...st, written: true } };
    if (observed !== undefined) body.status.observedGeneration = observed;
    try {
      await takeToken();
      await co.replaceNamespacedCustomObjectStatus({ ...crd, namespace, name, body });
      if (++writesOk === writesWanted) {
        tWritten = now();
        cWritten = cpu();
        if (onWritten) onWritten();
      }
      return;
    } catch (e) {
      if (!(e && e.code === 409) || attempt === 5) throw e;
      conflicts++;
      await sleepMs(delay);
      delay = Math.min(delay * 2, 1000);
      await takeToken();
      base = await co.getNamespacedCustomObject({ ...crd, namespace, name });   // live re-read
    }
  }
}

const work = mode === 'burst' ? slowReconcile : mode === 'write' ? writeReconcile : reconcile;
async function worker() {
  for (;;) {
    if (!order.length) await new Promise((r) => idle.push(r));
    const key = order.shift();
    if (key === undefined) continue;
    pending.delete(key);
    processing.add(key);
    busy = true;
    try {
      await work(key);
    } catch (e) {                          // a failed reconcile: counted, retried after 10 ms
      if (!reconcileErrors++) console.error(`client-node: reconcile ${key}: ${e && (e.message || e)}`.slice(0, 600));
      setTimeout(() => add(key), 10);
    }
    busy = false;
    processing.delete(key);
    if (pending.has(key)) {                // added again while it was processed
      order.push(key);
      if (order.length > depthMax) depthMax = order.length;
      const w = idle.shift();
      if (w) w();
    }
    if (++reconciled === reconcileTarget && onReconciled) onReconciled();
  }
}

const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
const now = () => Number(process.hrtime.bigint()) / 1e9;
const rss = () => { if (global.gc) global.gc(); return process.memoryUsage().rss; };

let expected = -1, adds = 0, updates = 0, deletes = 0, tWatch = 0, tDone = 0, cDone = 0, done;
const finished = new Promise((r) => { done = r; });

const statusKb = (field) => {
  const m = readFileSync('/proc/self/status', 'utf8').match(new RegExp(`^${field}:\\s+(\\d+)`, 'm'));
  return m ? Number(m[1]) : -1;
};
let rssStart = -1, rss10 = -1, rss50 = -1, peakSampled = 0;
function burstSample(n) {
  if (n === 1) {            // the listed objects are cached: the burst starts here
    rssStart = statusKb('VmRSS');
    try { writeFileSync('/proc/self/clear_refs', '5'); } catch (e) { /* peak = sampled only */ }
  }
  if (n === 1 || n % 4096 === 0 || n === Math.floor(expected / 10) || n === Math.floor(expected / 2)) {
    const r = statusKb('VmRSS');
    if (r > peakSampled) peakSampled = r;
    if (rss10 < 0 && n >= expected / 10) rss10 = r;
    if (rss50 < 0 && n >= expected / 2) rss50 = r;
  }
}

let lists = 0, connects = 0, tRelisted = 0, cRelisted = 0, relistDone;
const relisted = new Promise((r) => { relistDone = r; });
let wrappedList = listFn;
if (mode === 'watch' || mode === 'burst') {
  expected = Number(mArg);
  wrappedList = async () => {
    const l = await listFn();
    l.metadata.resourceVersion = fromRv;
    tWatch = now();
    return l;
  };
} else {
  wrappedList = async () => {
    await takeToken();
    const l = await listFn();
    if (++lists > 1) {
      // relist: once this resolves, the informer replaces its cache in the same turn (before any
      // timer or I/O callback); the next check phase sees it done
      setImmediate(() => { tRelisted = now(); cRelisted = cpu(); relistDone(); });
      return l;
    }
    expected = l.items.length;
    reconcileTarget = expected;
    if (expected === 0) { tDone = now(); done(); }
    return l;
  };
}

async function informers(n) {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  let unlisted = n, expectedAdds = 0, added = 0, ready;
  const synced = new Promise((r) => { ready = r; });
  const check = () => { if (unlisted === 0 && added >= expectedAdds) ready(); };
  const infs = [];
  for (let i = 0; i < n; i++) {
    const namespace = `bench-${i}`;
    let listed = false;
    const list = async () => {
      const l = await core.listNamespacedConfigMap({ namespace });
      if (!listed) {           // the first list: its items are this informer's share of the sync
        listed = true;
        expectedAdds += l.items.length;
        unlisted--;
        setImmediate(check);   // after the informer has handed the items to its handler
      }
      return l;
    };
    const one = k8s.makeInformer(kc, `/api/v1/namespaces/${namespace}/configmaps`, list);
    one.on('add', (o) => { enqueue(o); added++; check(); });
    one.on('update', enqueue);
    one.on('error', (e) => { console.error(`client-node informer ${namespace} error:`, e && (e.message || e)); process.exit(1); });
    infs.push(one);
  }
  const timer = setTimeout(() => { console.error('client-node: informers not synced in 600 s'); process.exit(1); }, 600000);
  const t0 = now();
  await Promise.all(infs.map((one) => one.start()));
  await synced;
  clearTimeout(timer);
  console.log(`informers=${n} objects=${expectedAdds} seconds=${(now() - t0).toFixed(4)}`);
  process.stdin.on('end', () => process.exit(0));  // no stop(): it reports the aborted watches as errors
  process.stdin.resume();
  await new Promise(() => {});                       // the watches keep the process alive
}
if (mode === 'informers') await informers(Number(fromRv));

const rss0 = rss();
inf = k8s.makeInformer(kc, path, wrappedList);
const streaming = mode === 'watch' || mode === 'burst';
inf.on('add', (o) => { enqueue(o); if (!streaming && ++adds === expected) { tDone = now(); cDone = cpu(); done(); } });
inf.on('update', (o) => {
  enqueue(o);
  if (!streaming) return;
  ++updates;
  if (mode === 'burst') burstSample(updates);
  if (updates === expected) { tDone = now(); done(); }
});
inf.on('delete', () => { deletes++; });
inf.on('connect', () => { connects++; });
if (qps > 0) {
  // the limiter covers every request, as luaop's REST client's does: the informer's watch too
  // (makeInformer's ListWatch keeps its Watch in `watch`; wrapped here, the informer unchanged)
  const w = inf.watch, watchFn = w.watch.bind(w);
  w.watch = async (...a) => { await takeToken(); return watchFn(...a); };
}
if (mode === 'write') writesWanted = Number(mArg);
inf.on('error', (e) => { console.error('client-node informer error:', e && (e.message || e)); process.exit(1); });
for (let i = 0; i < workersWanted; i++) worker();
const t0 = now();
const c0 = cpu();
await inf.start();
// the whole run (each mode ends in process.exit): 600 s, as the C programs' deadline
setTimeout(() => { console.error('client-node: timed out'); process.exit(1); }, 600000);
await finished;
const cpuS = cpu() - c0;
if (mode === 'startup') {
  console.log(`ready=1 objects=${expected} rss_kb=${Math.round(rss() / 1024)}`);
} else if (mode === 'reconcile') {
  const tSynced = tDone;
  if (reconciled < reconcileTarget) await new Promise((r) => { onReconciled = r; });
  const dt = now() - tSynced;
  console.log(`objects=${expected} workers=${workersWanted} seconds=${dt.toFixed(4)} ` +
              `rate=${(expected / dt).toFixed(1)} cpu_s=${(cpu() - c0).toFixed(4)} rss_kb=${Math.round(rss() / 1024)}`);
} else if (mode === 'write') {
  if (writesOk < writesWanted) await new Promise((r) => { onWritten = r; });
  const dt = tWritten - tDone;
  console.log(`writes=${writesOk} objects=${expected} workers=${workersWanted} seconds=${dt.toFixed(4)} ` +
              `rate=${(writesWanted / dt).toFixed(1)} cpu_s=${(cWritten - cDone).toFixed(4)} conflicts=${conflicts} ` +
              `errors=${reconcileErrors} reconciles=${reconciled} qps=${qps} burst=${burstTokens}`);
} else if (mode === 'relist') {
  const server = fromRv;
  // the watch is established: ListWatch holds its request once the response headers are in
  while (!inf.request) await sleepMs(5);
  await sleepMs(100);
  const steady = Math.round(rss() / 1024);   // after a full gc, as luaop's after malloc_trim
  try { writeFileSync('/proc/self/clear_refs', '5'); } catch (e) { /* VmHWM not reset */ }
  const seen0 = adds + updates + deletes, lists0 = lists, connects0 = connects;
  const tf = now(), cf = cpu();
  // the fault of bench/sync.c's relist (its own ConfigMap name: luaop's ran on this server before)
  const post = async (p, body) => {
    const r = await fetch(server + p, { method: 'POST', body: body || '',
                                        headers: { 'Content-Type': 'application/json' } });
    await r.arrayBuffer();
    if (r.status < 200 || r.status > 299) throw new Error(`POST ${p} -> ${r.status}`);
  };
  await post('/luaop-fault/stall?on=true');
  await post('/api/v1/namespaces/default/configmaps',
             '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bench-relist-client-node"}}');
  await post('/luaop-fault/compact');
  await post('/luaop-fault/close-watches');
  await post('/luaop-fault/stall?on=false');
  await relisted;
  const dt = tRelisted - tf;
  const peak = statusKb('VmHWM');
  const after = Math.round(rss() / 1024);
  console.log(`objects=${inf.list().length} recover_s=${dt.toFixed(4)} cpu_s=${(cRelisted - cf).toFixed(4)} ` +
              `steady_kb=${steady} peak_kb=${peak} after_kb=${after} lists=${lists} relists=${lists - lists0} ` +
              `watches=${connects - connects0} delivered=${adds + updates + deletes - seen0} backoff_ms=0`);
} else if (mode === 'burst') {
  const dt = tDone - tWatch;
  const rssAll = statusKb('VmRSS');
  while (order.length || busy) await new Promise((r) => setTimeout(r, 1));
  const drain = now() - tDone;
  const rssEnd = statusKb('VmRSS'), peak = statusKb('VmHWM');
  let lost = 0, keys = 0;
  for (const o of inf.list()) {
    keys++;
    const key = `${o.metadata.namespace || ''}/${o.metadata.name}`;
    if (seen.get(key) !== o.metadata.resourceVersion) {
      if (!lost) console.error(`client-node: ${key} last reconciled at ${seen.get(key)}, final ${o.metadata.resourceVersion}`);
      lost++;
    }
  }
  console.log(`events=${expected} keys=${keys} seconds=${dt.toFixed(4)} rate=${(expected / dt).toFixed(1)} ` +
              `cpu_s=${(cpu() - c0).toFixed(4)} reconciles=${reconciled} depth_max=${depthMax} drain_s=${drain.toFixed(4)} ` +
              `delay_ms=${delayMs} rss_start_kb=${rssStart} rss_10_kb=${rss10} rss_50_kb=${rss50} rss_all_kb=${rssAll} ` +
              `rss_end_kb=${rssEnd} peak_kb=${peak} peak_sampled_kb=${peakSampled} lost=${lost}`);
} else if (mode === 'sync') {
  const dt = tDone - t0;
  const rss1 = rss();
  console.log(`objects=${expected} seconds=${dt.toFixed(4)} rate=${(expected / dt).toFixed(1)} cpu_s=${cpuS.toFixed(4)} ` +
              `rss_delta_kb=${Math.round((rss1 - rss0) / 1024)}`);
} else {
  const dt = tDone - tWatch;
  console.log(`events=${expected} seconds=${dt.toFixed(4)} rate=${(expected / dt).toFixed(1)} cpu_s=${cpuS.toFixed(4)}`);
}
process.exit(0); // no inf.stop(): it reports the aborted watch as an error
