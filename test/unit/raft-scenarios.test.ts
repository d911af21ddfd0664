/**
 * Golden protocol transcripts: every raft/testdata/*.txt is a list of blocks
 *
 *   command args...
 *   ----
 *   expected output
 *
 * separated by blank lines. The test replays the commands against a fresh InteractionEnv and compares
 * each output. `REWRITE=1 npx vitest run test/unit/raft-scenarios` rewrites the expected outputs;
 * review the diff — it is the protocol.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { InteractionEnv } from './raft-interaction-env';

const DIR = path.resolve(__dirname, '../../raft/testdata');
const REWRITE = process.env['REWRITE'] === '1';

interface Block {
  cmd: string;
  expected: string;
  /** Lines starting with '#' before the command, kept on rewrite. */
  comments: string[];
}

function parse(text: string): Block[] {
  const blocks: Block[] = [];
  for (const chunk of text.split(/\n\s*\n/)) {
    const lines = chunk.split('\n').filter((l) => l.length > 0);
    if (lines.length === 0) continue;
    const comments = lines.filter((l, i) => l.startsWith('#') && lines.slice(0, i).every((x) => x.startsWith('#')));
    const rest = lines.slice(comments.length);
    if (rest.length === 0) {
      blocks.push({ cmd: '', expected: '', comments });
      continue;
    }
    const sep = rest.indexOf('----');
    blocks.push({ cmd: rest[0]!, expected: sep < 0 ? '' : rest.slice(sep + 1).join('\n'), comments });
  }
  return blocks;
}

function render(blocks: Block[]): string {
  return (
    blocks
      .map((b) => [...b.comments, ...(b.cmd ? [b.cmd, '----', b.expected] : [])].join('\n'))
      .join('\n\n') + '\n'
  );
}

const scenarioNames: Record<string, string> = {
  'election.txt': 'raft scenario: three voters elect a leader that commits its no-op',
  'prevote.txt': 'raft scenario: pre-vote keeps a partitioned node from inflating terms when it rejoins',
  'checkquorum.txt': 'raft scenario: an isolated leader steps down (check-quorum)',
  'figure8.txt': 'raft scenario: Figure 8 — a leader never commits an old-term entry by counting replicas',
  'single-voter.txt': 'raft scenario: a single voter never reports an entry committed before it is persisted',
  'snapshot.txt': 'raft scenario: a follower behind the compacted log catches up from a snapshot',
  'transfer.txt': 'raft scenario: leadership transfer hands over to an up-to-date voter',
  'conf-change.txt': 'raft scenario: add and remove a voter, one change at a time, effective when applied',
  'learner.txt': 'raft scenario: a learner replicates without voting, then is promoted',
  'read-index.txt': 'raft scenario: ReadIndex waits for an own-term commit and a heartbeat quorum',
};

describe('raft scenarios (golden transcripts)', () => {
  const files = fs.existsSync(DIR) ? fs.readdirSync(DIR).filter((f) => f.endsWith('.txt')).sort() : [];
  it('raft scenarios: every required transcript exists', () => {
    for (const f of Object.keys(scenarioNames)) expect(files, `missing raft/testdata/${f}`).toContain(f);
  });
  for (const file of files) {
    it(scenarioNames[file] ?? `raft scenario: ${file}`, () => {
      const p = path.join(DIR, file);
      const blocks = parse(fs.readFileSync(p, 'utf8'));
      const env = new InteractionEnv();
      for (const b of blocks) {
        if (!b.cmd) continue;
        const [cmd, ...args] = b.cmd.trim().split(/\s+/);
        const got = env.run(cmd!, args);
        if (REWRITE) b.expected = got;
        else expect(got, `${file}: ${b.cmd}`).toBe(b.expected);
      }
      if (REWRITE) fs.writeFileSync(p, render(blocks));
    });
  }
});
