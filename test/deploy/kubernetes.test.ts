/**
 * The Kubernetes manifests in deploy/kubernetes, checked against the real
 * service: probe paths are real routes, the ports agree, every variable set
 * on the sidecar is a setting the service reads and accepts, the ConfigMap
 * holds exactly the shipped policies and loads (in the folder layout the
 * kubelet mounts), and a ConfigMap update is picked up by a reload.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { parseAllDocuments } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app/app.js';
import { loadConfig } from '../../src/config.js';
import { loadPolicyDir } from '../../src/policy/load.js';
import { PolicyStore } from '../../src/policy/reload.js';
import { ROOT } from '../helpers/process.js';
import { SHIPPED_POLICIES, testApp } from '../helpers/app.js';
import { ofKind, parseDockerfile, properties, stages } from './image.js';

type Manifest = Record<string, any>;

const DIR = join(ROOT, 'deploy', 'kubernetes');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));

function manifests(file: string): Manifest[] {
  const docs = parseAllDocuments(readFileSync(join(DIR, file), 'utf8'));
  if (!Array.isArray(docs)) throw new Error(`${file}: no YAML documents`);
  const out: Manifest[] = [];
  for (const d of docs) {
    if (d.errors.length > 0) throw new Error(`${file}: ${d.errors.map((e) => e.message).join('; ')}`);
    const js = d.toJS() as Manifest | null;
    if (js) out.push(js);
  }
  return out;
}

const all = readdirSync(DIR)
  .filter((f) => /\.ya?ml$/.test(f))
  .flatMap((f) => manifests(f).map((m) => ({ file: f, m })));
const one = (kind: string): Manifest => {
  const found = all.filter((x) => x.m.kind === kind);
  if (found.length !== 1) throw new Error(`expected one ${kind} in deploy/kubernetes, found ${found.length}`);
  return found[0]!.m;
};

const deployment = one('Deployment');
const configMap = one('ConfigMap');
const secret = one('Secret');
const pod = deployment.spec.template.spec as Manifest;
const containers = pod.containers as Manifest[];
const sidecar = containers.find((c) => String(c.image).includes('/trustgate:'))!;
const host = containers.find((c) => c !== sidecar)!;

/** The names src/config.ts reads from the environment. */
const SETTINGS = new Set(
  [...readFileSync(join(ROOT, 'src', 'config.ts'), 'utf8').matchAll(/\benv\.([A-Z][A-Z0-9_]*)|\(env, '([A-Z][A-Z0-9_]*)'/g)].map((m) => m[1] ?? m[2]!),
);

/** A container's environment as the kubelet would set it (secrets from secret.example.yaml). */
function envOf(c: Manifest): Record<string, string> {
  const env: Record<string, string> = {};
  for (const e of (c.env ?? []) as Manifest[]) {
    if (typeof e.value === 'string') env[e.name] = e.value;
    else if (e.valueFrom?.secretKeyRef) {
      const ref = e.valueFrom.secretKeyRef;
      expect(ref.name, `${e.name}: Secret name`).toBe(secret.metadata.name);
      const v = secret.stringData?.[ref.key] ?? (secret.data?.[ref.key] !== undefined ? Buffer.from(secret.data[ref.key], 'base64').toString('utf8') : undefined);
      expect(v, `${e.name}: Secret key ${ref.key}`).toBeTypeOf('string');
      env[e.name] = v;
    } else {
      throw new Error(`${e.name}: unsupported env source ${JSON.stringify(e)}`);
    }
  }
  return env;
}

const sidecarEnv = envOf(sidecar);
const defaults = loadConfig({});

/** A probe's port as a number (named ports resolved on the container). */
function probePort(c: Manifest, port: string | number): number {
  if (typeof port === 'number') return port;
  const named = (c.ports as Manifest[]).find((p) => p.name === port);
  expect(named, `named port ${port}`).toBeDefined();
  return named!.containerPort;
}

/** Kubernetes quantities (`100m`, `1`, `128Mi`, `1G`) as numbers. */
function quantity(q: string | number): number {
  if (typeof q === 'number') return q;
  const m = /^([0-9.]+)(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/.exec(q);
  if (!m) throw new Error(`not a quantity: ${q}`);
  const mult: Record<string, number> = { m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40 };
  return Number(m[1]) * (m[2] ? mult[m[2]]! : 1);
}

/**
 * Write ConfigMap data the way the kubelet mounts it: the files in a
 * timestamped hidden folder, `..data` a link to it, and each key a link to
 * `..data/<key>`. A later call swaps `..data` atomically, as an update does.
 */
function mountConfigMap(dir: string, data: Record<string, string>, stamp: string): void {
  const ts = `..${stamp}`;
  mkdirSync(join(dir, ts), { recursive: true });
  for (const [k, v] of Object.entries(data)) writeFileSync(join(dir, ts, k), v);
  symlinkSync(ts, join(dir, '..data_tmp'));
  renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
  for (const k of Object.keys(data)) {
    try {
      symlinkSync(join('..data', k), join(dir, k));
    } catch {
      // already linked by an earlier version
    }
  }
}

const work = mkdtempSync(join(tmpdir(), 'trustgate-k8s-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('deploy/kubernetes', () => {
  it('is a Deployment whose pod runs a host and the Trustgate sidecar', () => {
    expect(deployment.apiVersion).toBe('apps/v1');
    expect(deployment.spec.template.metadata.labels).toMatchObject(deployment.spec.selector.matchLabels);
    expect(containers).toHaveLength(2);
    expect(sidecar).toBeDefined();
    expect(sidecar.image).toBe(`ghcr.io/example/trustgate:${pkg.version}`);
    const labels = properties(stages(parseDockerfile()).at(-1)!, 'LABEL');
    expect(sidecar.image.split(':').at(-1)).toBe(labels['org.opencontainers.image.version']);
    expect(host.image).toBe('ghcr.io/example/ai-host:latest');
  });

  it('sets on the sidecar only settings the service reads, and values it accepts', () => {
    expect(SETTINGS).toContain('PORT');
    expect(SETTINGS).toContain('TRUSTGATE_REQUEST_TIMEOUT_MS');
    // NODE_OPTIONS is Node's own (the heap limit, checked below).
    for (const name of Object.keys(sidecarEnv)) if (name !== 'NODE_OPTIONS') expect(SETTINGS, name).toContain(name);
    const config = loadConfig(sidecarEnv);
    expect(config.token).toBeDefined();
    expect(config.policyDir).toBe(sidecarEnv.TRUSTGATE_POLICY_DIR);
  });

  it('exposes the port the service listens on, named http', () => {
    const port = loadConfig(sidecarEnv).port;
    expect(port).toBe(sidecarEnv.PORT !== undefined ? Number(sidecarEnv.PORT) : defaults.port);
    const ports = sidecar.ports as Manifest[];
    expect(ports).toHaveLength(1);
    expect(ports[0]).toMatchObject({ name: 'http', containerPort: port });
    // The host calls it on loopback.
    expect(envOf(host).TRUSTGATE_URL).toBe(`http://127.0.0.1:${port}`);
  });

  it('probes /healthz (liveness) and /readyz (readiness) on that port, reachable from the node', () => {
    const port = loadConfig(sidecarEnv).port;
    expect(sidecar.livenessProbe.httpGet.path).toBe('/healthz');
    expect(sidecar.readinessProbe.httpGet.path).toBe('/readyz');
    expect(probePort(sidecar, sidecar.livenessProbe.httpGet.port)).toBe(port);
    expect(probePort(sidecar, sidecar.readinessProbe.httpGet.port)).toBe(port);
    // httpGet probes connect to the pod IP: a loopback bind would fail them.
    const bind = loadConfig(sidecarEnv).host;
    expect(bind === 'localhost' || bind === '::1' || bind.startsWith('127.')).toBe(false);
  });

  it('mounts the ConfigMap, as a whole folder, at TRUSTGATE_POLICY_DIR', () => {
    const mounts = (sidecar.volumeMounts ?? []) as Manifest[];
    const mount = mounts.find((m) => m.mountPath === sidecarEnv.TRUSTGATE_POLICY_DIR);
    expect(mount).toBeDefined();
    expect(mount!.subPath, 'subPath mounts never see ConfigMap updates').toBeUndefined();
    expect(mount!.readOnly).toBe(true);
    const volume = (pod.volumes as Manifest[]).find((v) => v.name === mount!.name);
    expect(volume?.configMap?.name).toBe(configMap.metadata.name);
  });

  it('gives both containers the token from the same Secret', () => {
    for (const c of containers) {
      const e = (c.env as Manifest[]).find((x) => x.name === 'TRUSTGATE_TOKEN');
      expect(e?.valueFrom?.secretKeyRef, c.name).toEqual({ name: secret.metadata.name, key: 'token' });
    }
    expect(envOf(host).TRUSTGATE_TOKEN).toBe(sidecarEnv.TRUSTGATE_TOKEN);
  });

  it('sets resource requests and limits on both containers', () => {
    for (const c of containers) {
      for (const r of ['cpu', 'memory']) {
        const req = c.resources?.requests?.[r];
        const lim = c.resources?.limits?.[r];
        expect(req, `${c.name} requests.${r}`).toBeDefined();
        expect(lim, `${c.name} limits.${r}`).toBeDefined();
        expect(quantity(req)).toBeLessThanOrEqual(quantity(lim));
      }
    }
    // Room above what the service uses when idle (about 90 MB resident).
    expect(quantity(sidecar.resources.limits.memory)).toBeGreaterThanOrEqual(256 * 2 ** 20);
  });

  it('limits the sidecar V8 heap below its memory limit, leaving room for the process and the admission budget', () => {
    const opts = sidecarEnv.NODE_OPTIONS ?? '';
    const m = /(?:^|\s)--max-old-space-size=(\d+)(?:\s|$)/.exec(opts);
    expect(m, `NODE_OPTIONS ${JSON.stringify(opts)}`).not.toBeNull();
    const heap = Number(m![1]) * 2 ** 20;
    const limit = quantity(sidecar.resources.limits.memory);
    const budget = loadConfig(sidecarEnv).maxInflightBytes;
    // docs/operations/admission.md#sizing: peak RSS about 110 MB + 3.5 x the budget with a heap limit;
    // the heap limit itself must leave the code, stacks and buffers outside the heap room below the container's.
    expect(heap).toBeLessThanOrEqual(limit - 128 * 2 ** 20);
    expect(110 * 2 ** 20 + 3.5 * budget).toBeLessThanOrEqual(heap);
    // Node accepts it as given (an unknown or malformed option stops the process before it serves).
    const run = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(require("v8").getHeapStatistics().heap_size_limit))'], {
      env: { PATH: process.env.PATH ?? '', NODE_OPTIONS: opts },
      encoding: 'utf8',
      timeout: 15_000,
    });
    expect(run.status, run.stderr).toBe(0);
    // V8's limit is the old generation plus the young one.
    expect(Number(run.stdout)).toBeGreaterThanOrEqual(heap);
    expect(Number(run.stdout)).toBeLessThan(heap + 128 * 2 ** 20);
  });

  it('runs both containers non-root, read-only, without privilege escalation or capabilities', () => {
    for (const c of containers) {
      const sc = { ...(pod.securityContext ?? {}), ...(c.securityContext ?? {}) };
      expect(sc.runAsNonRoot, c.name).toBe(true);
      expect(c.securityContext?.readOnlyRootFilesystem, c.name).toBe(true);
      expect(c.securityContext?.allowPrivilegeEscalation, c.name).toBe(false);
      expect(c.securityContext?.capabilities?.drop, c.name).toContain('ALL');
      expect(c.securityContext?.privileged ?? false, c.name).toBe(false);
    }
    // The sidecar's user is the image's USER.
    const final = stages(parseDockerfile()).at(-1)!;
    const user = ofKind(final, 'USER').at(-1)!.getArgumentsContent()!.trim();
    const [uid, gid] = user.split(':');
    const sc = { ...(pod.securityContext ?? {}), ...(sidecar.securityContext ?? {}) };
    expect(String(sc.runAsUser)).toBe(uid === 'node' ? '1000' : uid);
    if (gid !== undefined) expect(String(sc.runAsGroup)).toBe(gid === 'node' ? '1000' : gid);
  });

  it('keeps other pods off the sidecar port with a NetworkPolicy', () => {
    const np = one('NetworkPolicy');
    expect(deployment.spec.template.metadata.labels).toMatchObject(np.spec.podSelector.matchLabels);
    expect(np.spec.policyTypes).toContain('Ingress');
    const admitted = (np.spec.ingress as Manifest[]).flatMap((rule) => (rule.ports ?? [{ port: 'ANY' }]) as Manifest[]).map((p) => p.port);
    expect(admitted).not.toContain('ANY');
    for (const p of admitted) {
      expect(p).not.toBe('http');
      expect(p).not.toBe(loadConfig(sidecarEnv).port);
      const named = (host.ports as Manifest[]).find((x) => x.name === p || x.containerPort === p);
      expect(named, `port ${p} is the host's`).toBeDefined();
    }
  });

  it('ConfigMap data is the policies folder, byte for byte', () => {
    const data = configMap.data as Record<string, string>;
    expect(configMap.binaryData).toBeUndefined();
    const policyFiles = readdirSync(SHIPPED_POLICIES).filter((f) => !f.startsWith('.') && /\.(ya?ml|json)$/i.test(f) && !/\.test\.ya?ml$/i.test(f));
    expect(policyFiles.length).toBeGreaterThan(0);
    for (const f of policyFiles) {
      expect(Object.keys(data), `${f} is in configmap.yaml`).toContain(f);
    }
    for (const [k, v] of Object.entries(data)) {
      const bytes = readFileSync(join(SHIPPED_POLICIES, k));
      expect(Buffer.from(v, 'utf8').equals(bytes), `${k} equals policies/${k} (regenerate configmap.yaml)`).toBe(true);
    }
  });

  it('the ConfigMap, mounted as the kubelet mounts it, loads and serves; probes answer; a reload picks up an update', async () => {
    const dir = join(work, 'policies');
    mkdirSync(dir);
    const data = configMap.data as Record<string, string>;
    mountConfigMap(dir, data, '2025_01_01_00_00_00.000000001');

    const set = await loadPolicyDir(dir);
    const shipped = await loadPolicyDir(SHIPPED_POLICIES);
    expect(set.files).toEqual(Object.keys(data).sort());
    expect(set.revision).toBe(shipped.revision);

    // Before any policy set is loaded, the readiness probe fails.
    const envHere = { ...sidecarEnv, TRUSTGATE_POLICY_DIR: dir };
    const cold = await buildApp({ config: loadConfig(envHere), store: new PolicyStore(dir), logger: pino({ level: 'silent' }) });
    try {
      expect((await cold.inject({ method: 'GET', url: sidecar.livenessProbe.httpGet.path })).statusCode).toBe(200);
      expect((await cold.inject({ method: 'GET', url: sidecar.readinessProbe.httpGet.path })).statusCode).toBe(503);
    } finally {
      await cold.close();
    }

    const t = await testApp({ ...envHere, LOG_LEVEL: 'silent' }, dir);
    try {
      const live = await t.app.inject({ method: 'GET', url: sidecar.livenessProbe.httpGet.path });
      expect(live.statusCode).toBe(200);
      const ready = await t.app.inject({ method: 'GET', url: sidecar.readinessProbe.httpGet.path });
      expect(ready.statusCode).toBe(200);
      expect(ready.json()).toMatchObject({ status: 'ready', policyRevision: shipped.revision });

      // An update: the kubelet swaps ..data to a new folder; a reload serves it.
      const first = Object.keys(data).sort()[0]!;
      const updated = { ...data, [first]: data[first]!.replace(/^mode: enforce$/m, 'mode: audit') };
      expect(updated[first]).not.toBe(data[first]);
      mountConfigMap(dir, updated, '2025_01_01_00_01_00.000000002');
      rmSync(join(dir, '..2025_01_01_00_00_00.000000001'), { recursive: true });
      const reload = await t.app.inject({
        method: 'POST',
        url: '/v1/policies/reload',
        headers: { authorization: `Bearer ${sidecarEnv.TRUSTGATE_TOKEN}` },
      });
      expect(reload.statusCode).toBe(200);
      const body = reload.json() as { policyRevision: string; policies: Array<{ file: string; mode: string }> };
      expect(body.policyRevision).not.toBe(shipped.revision);
      expect(body.policies.find((p) => p.file === first)?.mode).toBe('audit');
    } finally {
      await t.close();
    }
  });
});
