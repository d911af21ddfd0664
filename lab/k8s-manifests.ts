/**
 * Kubernetes manifests for a tessera cluster, rendered from one values file (deploy/kubernetes/,
 * docs/deploy.md): a StatefulSet of masters and one of tservers, each behind a headless Service that
 * gives every pod a stable DNS name (its identity: --server_broadcast_addresses), a
 * PodDisruptionBudget each (a drain takes one pod at a time, so the masters keep their majority and
 * every tablet two of three replicas), liveness and readiness probes on /healthz, a volume claim per
 * pod, the cluster secret mounted from a Secret (servers bind every interface of the pod, which
 * needs one: docs/security.md), and anti-affinity across nodes. Pure: values in, objects out.
 */
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { DbError, ErrorCode } from '../common/errors';

export interface K8sValues {
  namespace: string;
  /** The image `tessera lab image` built (its tag), pushed where the cluster pulls from. */
  image: string;
  imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never';
  /** node inside the image (the lab image: /usr/bin/node; app in /app). */
  nodePath: string;
  appDir: string;
  masters: 1 | 3;
  tservers: number;
  replicationFactor: number;
  /** Name of the Secret holding the cluster secret under key `cluster-secret`; its value, to render the Secret too (else create it with kubectl). */
  clusterSecretName: string;
  clusterSecret?: string;
  storageClassName?: string;
  masterStorage: string;
  tserverStorage: string;
  /** required: never two masters (or two tservers) on one node; preferred: spread when possible (one-node test clusters). */
  antiAffinity: 'required' | 'preferred';
  resources: { master: Resources; tserver: Resources };
  /** Extra flags for every master / tserver: `name=value`. */
  masterFlags: string[];
  tserverFlags: string[];
}

interface Resources {
  cpu: string;
  memory: string;
}

export const K8S_DEFAULTS: K8sValues = {
  namespace: 'tessera',
  image: 'tessera-lab:latest',
  imagePullPolicy: 'IfNotPresent',
  nodePath: '/usr/bin/node',
  appDir: '/app',
  masters: 3,
  tservers: 3,
  replicationFactor: 3,
  clusterSecretName: 'tessera-cluster-secret',
  masterStorage: '10Gi',
  tserverStorage: '50Gi',
  antiAffinity: 'required',
  resources: { master: { cpu: '1', memory: '1Gi' }, tserver: { cpu: '2', memory: '4Gi' } },
  masterFlags: [],
  tserverFlags: [],
};

const PORTS = { masterRpc: 7100, masterWeb: 7000, tserverRpc: 9100, tserverWeb: 9000 } as const;
const SECRET_DIR = '/etc/tessera';
const SECRET_KEY = 'cluster-secret';
const DATA_DIR = '/data';
const APP = 'tessera';

function bad(message: string): DbError {
  return new DbError(ErrorCode.INVALID_ARGUMENT, `values: ${message}`);
}

/** Values from YAML text over the defaults; bad ones throw INVALID_ARGUMENT naming the key. */
export function parseK8sValues(text: string): K8sValues {
  const raw: unknown = parseYaml(text) ?? {};
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw bad('expected a mapping');
  const v = { ...K8S_DEFAULTS, ...(raw as Partial<K8sValues>) } as K8sValues;
  v.resources = { ...K8S_DEFAULTS.resources, ...((raw as Partial<K8sValues>).resources ?? {}) };
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(v.namespace)) throw bad(`namespace '${v.namespace}' is not a DNS label`);
  if (v.masters !== 1 && v.masters !== 3) throw bad('masters must be 1 or 3');
  if (!Number.isInteger(v.tservers) || v.tservers < 1) throw bad('tservers must be a positive integer');
  if (!Number.isInteger(v.replicationFactor) || v.replicationFactor < 1 || v.replicationFactor > v.tservers) throw bad('replicationFactor must be between 1 and tservers');
  if (!['required', 'preferred'].includes(v.antiAffinity)) throw bad("antiAffinity must be 'required' or 'preferred'");
  for (const f of [...v.masterFlags, ...v.tserverFlags]) if (!/^[A-Za-z_][A-Za-z0-9_]*=/.test(f)) throw bad(`flag '${f}' must look like name=value`);
  return v;
}

type Obj = Record<string, unknown>;

function dns(v: K8sValues, pod: string, service: string): string {
  return `${pod}.${service}.${v.namespace}.svc.cluster.local`;
}

/** The masters' addresses: pod DNS names through the headless service (stable across restarts). */
export function masterAddresses(v: K8sValues): string {
  return Array.from({ length: v.masters }, (_, i) => `${dns(v, `${APP}-master-${i}`, `${APP}-masters`)}:${PORTS.masterRpc}`).join(',');
}

function headlessService(v: K8sValues, role: 'master' | 'tserver'): Obj {
  const rpc = role === 'master' ? PORTS.masterRpc : PORTS.tserverRpc;
  const web = role === 'master' ? PORTS.masterWeb : PORTS.tserverWeb;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: `${APP}-${role}s`, namespace: v.namespace, labels: { app: APP, role } },
    spec: {
      clusterIP: 'None',
      // Peers must find each other before they are ready (masters elect a leader only once they talk).
      publishNotReadyAddresses: true,
      selector: { app: APP, role },
      ports: [
        { name: 'rpc', port: rpc, targetPort: rpc },
        { name: 'web', port: web, targetPort: web },
      ],
    },
  };
}

function affinity(v: K8sValues, role: string): Obj {
  const term = { labelSelector: { matchLabels: { app: APP, role } }, topologyKey: 'kubernetes.io/hostname' };
  return {
    podAntiAffinity:
      v.antiAffinity === 'required' ? { requiredDuringSchedulingIgnoredDuringExecution: [term] } : { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, podAffinityTerm: term }] },
  };
}

function probe(port: number, periodSeconds: number, failureThreshold: number): Obj {
  return { httpGet: { path: '/healthz', port }, periodSeconds, timeoutSeconds: 3, failureThreshold };
}

// Long by design (docs/conventions.md): one Kubernetes manifest, written out as the YAML it becomes.
function statefulSet(v: K8sValues, role: 'master' | 'tserver'): Obj {
  const master = role === 'master';
  const rpc = master ? PORTS.masterRpc : PORTS.tserverRpc;
  const web = master ? PORTS.masterWeb : PORTS.tserverWeb;
  const service = `${APP}-${role}s`;
  const args = [
    `${v.appDir}/dist/cli/main.js`,
    role,
    master ? `--master_addresses=${masterAddresses(v)}` : `--tserver_master_addrs=${masterAddresses(v)}`,
    // Bind every interface of the pod; the identity is the pod's DNS name (no lookup at start).
    `--rpc_bind_addresses=0.0.0.0:${rpc}`,
    `--server_broadcast_addresses=$(POD_NAME).${service}.${v.namespace}.svc.cluster.local:${rpc}`,
    '--webserver_interface=0.0.0.0',
    `--webserver_port=${web}`,
    `--fs_data_dirs=${DATA_DIR}`,
    `--cluster_secret_file=${SECRET_DIR}/${SECRET_KEY}`,
    ...(master ? [`--replication_factor=${v.replicationFactor}`] : []),
    ...(master ? v.masterFlags : v.tserverFlags).map((f) => `--${f}`),
  ];
  const res = master ? v.resources.master : v.resources.tserver;
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: `${APP}-${role}`, namespace: v.namespace, labels: { app: APP, role } },
    spec: {
      serviceName: service,
      replicas: master ? v.masters : v.tservers,
      // Masters start together (they need each other to elect); tservers too (each is independent).
      podManagementPolicy: 'Parallel',
      selector: { matchLabels: { app: APP, role } },
      template: {
        metadata: { labels: { app: APP, role } },
        spec: {
          affinity: affinity(v, role),
          terminationGracePeriodSeconds: 30,
          containers: [
            {
              name: role,
              image: v.image,
              imagePullPolicy: v.imagePullPolicy,
              command: [v.nodePath],
              args,
              env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
              ports: [
                { name: 'rpc', containerPort: rpc },
                { name: 'web', containerPort: web },
              ],
              // /healthz answers 200 while the server serves (503 when it says it is not ok).
              readinessProbe: probe(web, 5, 3),
              livenessProbe: { ...probe(web, 10, 6), initialDelaySeconds: 30 },
              resources: { requests: { cpu: res.cpu, memory: res.memory }, limits: { memory: res.memory } },
              volumeMounts: [
                { name: 'data', mountPath: DATA_DIR },
                { name: 'cluster-secret', mountPath: SECRET_DIR, readOnly: true },
              ],
            },
          ],
          volumes: [{ name: 'cluster-secret', secret: { secretName: v.clusterSecretName, defaultMode: 0o400 } }],
        },
      },
      volumeClaimTemplates: [
        {
          metadata: { name: 'data', labels: { app: APP, role } },
          spec: {
            accessModes: ['ReadWriteOnce'],
            ...(v.storageClassName ? { storageClassName: v.storageClassName } : {}),
            resources: { requests: { storage: master ? v.masterStorage : v.tserverStorage } },
          },
        },
      ],
    },
  };
}

function disruptionBudget(v: K8sValues, role: 'master' | 'tserver'): Obj {
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name: `${APP}-${role}`, namespace: v.namespace, labels: { app: APP, role } },
    // One at a time: 2 of 3 masters keep the majority; every tablet keeps 2 of its 3 replicas.
    spec: { maxUnavailable: 1, selector: { matchLabels: { app: APP, role } } },
  };
}

/** Every object, in the order kubectl should apply them. */
export function renderK8s(v: K8sValues): Obj[] {
  const out: Obj[] = [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: v.namespace, labels: { app: APP } } }];
  if (v.clusterSecret !== undefined) {
    out.push({ apiVersion: 'v1', kind: 'Secret', metadata: { name: v.clusterSecretName, namespace: v.namespace, labels: { app: APP } }, type: 'Opaque', stringData: { [SECRET_KEY]: `${v.clusterSecret}\n` } });
  }
  for (const role of ['master', 'tserver'] as const) out.push(headlessService(v, role), disruptionBudget(v, role), statefulSet(v, role));
  return out;
}

/** A multi-document YAML stream, with a header saying where it came from. */
export function k8sYaml(objects: readonly Obj[], source: string): string {
  const header = `# Rendered by \`tessera deploy render --values ${source}\` (lab/k8s-manifests.ts); edit the values, not this file.\n`;
  return header + objects.map((o) => `---\n${stringifyYaml(o, { lineWidth: 0 })}`).join('');
}
