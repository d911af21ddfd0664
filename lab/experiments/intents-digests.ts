/**
 * Per tablet, whether every replica holds the same provisional records: each replica's digest of
 * its intents' keys and values (/api/v1/tablet-checksum?read_ht=now, visible.intents).
 */
import type { NodeAddresses } from '../cluster-driver';
import { getJson } from '../console-http';
import { waitUntil } from '../wait-until';

interface IntentsDigestAnswer {
  visible: { appliedIndex: number; intents?: { sha256: string; txns: number; records: number } };
}

/**
 * Per tablet, every replica's digest of the provisional records it holds (/tablet-checksum
 * visible.intents), asked until the replicas stand at one applied index with equal digests (30 s).
 */
export async function sameIntentDigests(nodes: readonly NodeAddresses[], tablets: readonly string[]): Promise<{ same: boolean; detail: string }> {
  const parts: string[] = [];
  let same = true;
  for (const id of tablets) {
    let last = '';
    const ok = await waitUntil(
      async () => {
        const answers = await Promise.all(nodes.map(async (n) => ({ node: n.name, a: (await getJson(`${n.tserver.webUrl}/api/v1/tablet-checksum?id=${id}&read_ht=now`, 30_000).catch(() => undefined)) as IntentsDigestAnswer | undefined })));
        last = answers.map((x) => `${x.node} ${x.a?.visible.intents ? `${x.a.visible.intents.records} records ${x.a.visible.intents.sha256.slice(0, 12)}` : 'no answer'} @${x.a?.visible.appliedIndex ?? '?'}`).join(', ');
        const first = answers[0]?.a?.visible;
        return first?.intents && first.intents.txns > 0 && answers.every((x) => x.a?.visible.appliedIndex === first.appliedIndex && x.a.visible.intents?.sha256 === first.intents!.sha256) ? true : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250, what: `equal provisional-record digests on the replicas of ${id}` },
    ).catch(() => false);
    if (!ok) same = false;
    parts.push(`${id.slice(0, 8)}: ${last}`);
  }
  return { same, detail: `provisional-record digests (keys and values) ${same ? 'equal' : 'DIFFER'}: ${parts.join('; ')}` };
}
