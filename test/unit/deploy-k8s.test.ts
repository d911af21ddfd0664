/**
 * The Kubernetes manifests (lab/k8s-manifests.ts, deploy/kubernetes/, docs/deploy.md): every object
 * validates against the Kubernetes OpenAPI schemas (kubernetes-models ships them: no network), the
 * committed tessera.yaml is what its values file renders, the servers' arguments are flags tessera
 * defines, and the pieces fit (selectors, probes, anti-affinity, the secret, the masters' names).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { ErrorCode, Flags, parseFlagArgs } from '../../common';
import { k8sYaml, masterAddresses, parseK8sValues, renderK8s } from '../../lab/k8s-manifests';
import { CLUSTER_SECRET_FILE } from '../../rpc/cluster-secret';
// Every server flag defined (the fast path a server process takes loads the same modules).
import '../../cli/server-commands';

const DIR = path.resolve(__dirname, '../../deploy/kubernetes');
type Obj = Record<string, unknown> & { kind: string };

interface Validatable {
  validate(): void;
}
type ModelClass = new (data: unknown) => Validatable;

/** The kubernetes-models class of each kind the renderer emits. */
async function modelOf(kind: string): Promise<ModelClass> {
  switch (kind) {
    case 'Namespace':
      return (await import('kubernetes-models/v1/Namespace')).Namespace as unknown as ModelClass;
    case 'Service':
      return (await import('kubernetes-models/v1/Service')).Service as unknown as ModelClass;
    case 'Secret':
      return (await import('kubernetes-models/v1/Secret')).Secret as unknown as ModelClass;
    case 'StatefulSet':
      return (await import('kubernetes-models/apps/v1/StatefulSet')).StatefulSet as unknown as ModelClass;
    case 'PodDisruptionBudget':
      return (await import('kubernetes-models/policy/v1/PodDisruptionBudget')).PodDisruptionBudget as unknown as ModelClass;
    default:
      throw new Error(`no schema for kind ${kind}`);
  }
}

async function validateAll(objects: readonly Obj[]): Promise<void> {
  for (const o of objects) {
    const M = await modelOf(o.kind);
    expect(() => new M(o).validate(), `${o.kind} ${JSON.stringify((o['metadata'] as { name: string }).name)}`).not.toThrow();
  }
}

const at = (o: unknown, ...keys: Array<string | number>): unknown => keys.reduce<unknown>((x, k) => (x as Record<string | number, unknown>)[k], o);

describe('kubernetes manifests', () => {
  it('k8s: every object of the committed deploy/kubernetes/tessera.yaml validates against the Kubernetes schemas, and it is what values.yaml renders', async () => {
    const values = fs.readFileSync(path.join(DIR, 'values.yaml'), 'utf8');
    const committed = fs.readFileSync(path.join(DIR, 'tessera.yaml'), 'utf8');
    expect(committed).toBe(k8sYaml(renderK8s(parseK8sValues(values)), 'deploy/kubernetes/values.yaml'));
    const docs = parseAllDocuments(committed).map((d) => d.toJS() as Obj);
    expect(docs.map((d) => d.kind)).toEqual(['Namespace', 'Service', 'PodDisruptionBudget', 'StatefulSet', 'Service', 'PodDisruptionBudget', 'StatefulSet']);
    await validateAll(docs);
  });

  it('k8s: a schema violation is caught (the validator is not a no-op)', async () => {
    const M = await modelOf('StatefulSet');
    const sts = renderK8s(parseK8sValues('')).find((o) => o['kind'] === 'StatefulSet')!;
    expect(() => new M(sts).validate()).not.toThrow();
    expect(() => new M({ ...sts, spec: { ...(sts['spec'] as object), replicas: 'three' } }).validate()).toThrow();
  });

  it('k8s: the pieces fit: selectors, headless services, probes on /healthz, PDBs, anti-affinity, the secret, DNS names of the masters, flags tessera defines', async () => {
    const v = parseK8sValues('tservers: 5\nclusterSecret: rendered-secret-0123456789abcdef\nmasterFlags: [log_level=warn]\n');
    const objs = renderK8s(v) as Obj[];
    await validateAll(objs);
    expect(objs.find((o) => o.kind === 'Secret')).toBeDefined();
    for (const role of ['master', 'tserver']) {
      const sts = objs.find((o) => o.kind === 'StatefulSet' && at(o, 'metadata', 'name') === `tessera-${role}`)!;
      const svc = objs.find((o) => o.kind === 'Service' && at(o, 'metadata', 'name') === `tessera-${role}s`)!;
      const pdb = objs.find((o) => o.kind === 'PodDisruptionBudget' && at(o, 'metadata', 'name') === `tessera-${role}`)!;
      const labels = at(sts, 'spec', 'template', 'metadata', 'labels');
      expect(at(sts, 'spec', 'selector', 'matchLabels')).toEqual(labels);
      expect(at(svc, 'spec', 'selector')).toEqual(labels);
      expect(at(pdb, 'spec', 'selector', 'matchLabels')).toEqual(labels);
      expect(at(svc, 'spec', 'clusterIP')).toBe('None');
      expect(at(sts, 'spec', 'serviceName')).toBe(`tessera-${role}s`);
      expect(at(sts, 'spec', 'replicas')).toBe(role === 'master' ? 3 : 5);
      const c = at(sts, 'spec', 'template', 'spec', 'containers', 0) as Record<string, unknown>;
      expect(at(c, 'readinessProbe', 'httpGet', 'path')).toBe('/healthz');
      expect(at(c, 'livenessProbe', 'httpGet', 'path')).toBe('/healthz');
      expect(at(sts, 'spec', 'template', 'spec', 'affinity', 'podAntiAffinity', 'requiredDuringSchedulingIgnoredDuringExecution', 0, 'topologyKey')).toBe('kubernetes.io/hostname');
      expect(at(sts, 'spec', 'volumeClaimTemplates', 0, 'metadata', 'name')).toBe('data');
      // The arguments are tessera's own flags, with the values a pod needs.
      const args = c['args'] as string[];
      expect(args[1]).toBe(role);
      const { flags, positional } = parseFlagArgs(args.slice(2), new Flags());
      expect(positional).toEqual([]);
      expect(flags.get(CLUSTER_SECRET_FILE)).toBe('/etc/tessera/cluster-secret');
      expect(args).toContain(role === 'master' ? `--master_addresses=${masterAddresses(v)}` : `--tserver_master_addrs=${masterAddresses(v)}`);
    }
    expect(masterAddresses(v).split(',')).toEqual([0, 1, 2].map((i) => `tessera-master-${i}.tessera-masters.tessera.svc.cluster.local:7100`));
  });

  it('k8s: bad values get INVALID_ARGUMENT naming the key', () => {
    for (const bad of ['masters: 2', 'tservers: 0', 'replicationFactor: 4', 'namespace: Not_A_Label', 'antiAffinity: sometimes', 'tserverFlags: ["not a flag"]', '- a list']) {
      expect(() => parseK8sValues(bad), bad).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }));
    }
  });
});
