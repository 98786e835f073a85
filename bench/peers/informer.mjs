// informer.mjs — the client-node peer of bench/sync.c: makeInformer over list/watch with a
// trivial handler that puts "namespace/name" on a small deduplicating queue drained by an async
// worker (the shape of a controller). Run by bench/bench.py with `node --expose-gc`.
//
//   node informer.mjs sync  KUBECONFIG RESOURCE
//   node informer.mjs watch KUBECONFIG RESOURCE FROM_RV M
//   node informer.mjs reconcile KUBECONFIG RESOURCE WORKERS
//   node informer.mjs startup KUBECONFIG RESOURCE
//   node informer.mjs burst KUBECONFIG RESOURCE FROM_RV M DELAY_MS
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
// Output: one key=value line, like the C programs.
import * as k8s from '@kubernetes/client-node';

import { readFileSync, writeFileSync } from 'node:fs';

const [mode, kcPath, resource, fromRv, mArg, delayArg] = process.argv.slice(2);
const kc = new k8s.KubeConfig();
kc.loadFromFile(kcPath);
// The local API server speaks plain HTTP on loopback; client-node accepts http:// only with
// skipTLSVerify set (nothing is verified over plain HTTP anyway).
kc.loadFromOptions({
  clusters: kc.clusters.map((c) => ({ ...c, skipTLSVerify: true })),
  users: kc.users, contexts: kc.contexts, currentContext: kc.currentContext,
});

let path, listFn;
if (resource === 'pods' || resource === 'configmaps') {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  path = `/api/v1/${resource}`;
  listFn = resource === 'pods' ? () => core.listPodForAllNamespaces()
                               : () => core.listConfigMapForAllNamespaces();
} else {
  const [group, version, plural] = resource.split('/');
  const co = kc.makeApiClient(k8s.CustomObjectsApi);
  path = `/apis/${group}/${version}/${plural}`;
  listFn = () => co.listClusterCustomObject({ group, version, plural });
}

// The small queue: a set of pending keys plus FIFO order; one async worker drains it.
const pending = new Set();
const order = [];
let draining = false;
const workersWanted = mode === 'reconcile' ? Number(fromRv) : mode === 'burst' ? 1 : 0;
let depthMax = 0, busy = false;
let idle = [];          // resolvers of workers waiting for a key
let reconciled = 0, reconcileTarget = -1, onReconciled = null;
function enqueue(obj) {
  const key = `${obj.metadata.namespace || ''}/${obj.metadata.name}`;
  if (pending.has(key)) return;
  pending.add(key);
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
const work = mode === 'burst' ? slowReconcile : reconcile;
async function worker() {
  for (;;) {
    if (!order.length) await new Promise((r) => idle.push(r));
    const key = order.shift();
    if (key === undefined) continue;
    pending.delete(key);
    busy = true;
    await work(key);
    busy = false;
    if (++reconciled === reconcileTarget && onReconciled) onReconciled();
  }
}

const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
const now = () => Number(process.hrtime.bigint()) / 1e9;
const rss = () => { if (global.gc) global.gc(); return process.memoryUsage().rss; };

let expected = -1, adds = 0, updates = 0, tWatch = 0, tDone = 0, done;
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
    const l = await listFn();
    expected = l.items.length;
    reconcileTarget = expected;
    if (expected === 0) { tDone = now(); done(); }
    return l;
  };
}

const rss0 = rss();
inf = k8s.makeInformer(kc, path, wrappedList);
const streaming = mode === 'watch' || mode === 'burst';
inf.on('add', (o) => { enqueue(o); if (!streaming && ++adds === expected) { tDone = now(); done(); } });
inf.on('update', (o) => {
  enqueue(o);
  if (!streaming) return;
  ++updates;
  if (mode === 'burst') burstSample(updates);
  if (updates === expected) { tDone = now(); done(); }
});
inf.on('error', (e) => { console.error('client-node informer error:', e && (e.message || e)); process.exit(1); });
for (let i = 0; i < workersWanted; i++) worker();
const t0 = now();
const c0 = cpu();
await inf.start();
const timer = setTimeout(() => { console.error('client-node: timed out'); process.exit(1); }, 600000);
await finished;
clearTimeout(timer);
const cpuS = cpu() - c0;
if (mode === 'startup') {
  console.log(`ready=1 objects=${expected} rss_kb=${Math.round(rss() / 1024)}`);
} else if (mode === 'reconcile') {
  const tSynced = tDone;
  if (reconciled < reconcileTarget) await new Promise((r) => { onReconciled = r; });
  const dt = now() - tSynced;
  console.log(`objects=${expected} workers=${workersWanted} seconds=${dt.toFixed(4)} ` +
              `rate=${(expected / dt).toFixed(1)} cpu_s=${(cpu() - c0).toFixed(4)} rss_kb=${Math.round(rss() / 1024)}`);
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
