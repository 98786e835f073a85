// informer.mjs — the client-node peer of bench/sync.c: makeInformer over list/watch with a
// trivial handler that puts "namespace/name" on a small deduplicating queue drained by an async
// worker (the shape of a controller). Run by bench/bench.py with `node --expose-gc`.
//
//   node informer.mjs sync  KUBECONFIG RESOURCE
//   node informer.mjs watch KUBECONFIG RESOURCE FROM_RV M
//
// RESOURCE: "pods", "configmaps" or "GROUP/VERSION/PLURAL" (a custom resource, all namespaces).
// sync: time from start() until the last listed object reached the handler; RSS per object.
// watch: the list's resourceVersion is replaced by FROM_RV, so the watch replays M MODIFIED
// events from the server's history; time from the watch request to the M-th handler call.
// Output: one key=value line, like the C programs.
import * as k8s from '@kubernetes/client-node';

const [mode, kcPath, resource, fromRv, mArg] = process.argv.slice(2);
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
function enqueue(obj) {
  const key = `${obj.metadata.namespace || ''}/${obj.metadata.name}`;
  if (pending.has(key)) return;
  pending.add(key);
  order.push(key);
  if (!draining) {
    draining = true;
    setImmediate(drain);
  }
}
function drain() {
  while (order.length) pending.delete(order.shift());
  draining = false;
}

const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
const now = () => Number(process.hrtime.bigint()) / 1e9;
const rss = () => { if (global.gc) global.gc(); return process.memoryUsage().rss; };

let expected = -1, adds = 0, updates = 0, tWatch = 0, tDone = 0, done;
const finished = new Promise((r) => { done = r; });

let wrappedList = listFn;
if (mode === 'watch') {
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
    if (expected === 0) { tDone = now(); done(); }
    return l;
  };
}

const rss0 = rss();
const inf = k8s.makeInformer(kc, path, wrappedList);
inf.on('add', (o) => { enqueue(o); if (mode === 'sync' && ++adds === expected) { tDone = now(); done(); } });
inf.on('update', (o) => { enqueue(o); if (mode === 'watch' && ++updates === expected) { tDone = now(); done(); } });
inf.on('error', (e) => { console.error('client-node informer error:', e && (e.message || e)); process.exit(1); });
const t0 = now();
const c0 = cpu();
await inf.start();
const timer = setTimeout(() => { console.error('client-node: timed out'); process.exit(1); }, 600000);
await finished;
clearTimeout(timer);
const cpuS = cpu() - c0;
if (mode === 'sync') {
  const dt = tDone - t0;
  const rss1 = rss();
  console.log(`objects=${expected} seconds=${dt.toFixed(4)} rate=${(expected / dt).toFixed(1)} cpu_s=${cpuS.toFixed(4)} ` +
              `rss_delta_kb=${Math.round((rss1 - rss0) / 1024)}`);
} else {
  const dt = tDone - tWatch;
  console.log(`events=${expected} seconds=${dt.toFixed(4)} rate=${(expected / dt).toFixed(1)} cpu_s=${cpuS.toFixed(4)}`);
}
process.exit(0); // no inf.stop(): it reports the aborted watch as an error
