/**
 * Bank: transfers move money between accounts inside transactions; whole-table reads must always see
 * the initial total (snapshot isolation implies it) and never a negative balance.
 * Read completion value: Record<account, balance>.
 */
import type { HistoryOp } from './history';

export interface BankResult {
  valid: boolean;
  reads: number;
  transfersOk: number;
  wrongTotal: Array<{ index: number; total: number; balances: Record<string, number> }>;
  negative: Array<{ index: number; account: string; balance: number }>;
  missingAccounts: Array<{ index: number; accounts: string[] }>;
}

export function checkBank(history: readonly HistoryOp[], opts: { total: number; accounts: string[] }): BankResult {
  const r: BankResult = { valid: true, reads: 0, transfersOk: 0, wrongTotal: [], negative: [], missingAccounts: [] };
  for (const op of history) {
    if (op.type !== 'ok') continue;
    if (op.f === 'transfer') r.transfersOk++;
    if (op.f !== 'read') continue;
    r.reads++;
    const balances = op.value as Record<string, number>;
    const missing = opts.accounts.filter((a) => !(a in balances));
    if (missing.length) r.missingAccounts.push({ index: op.index, accounts: missing });
    let total = 0;
    for (const [acct, bal] of Object.entries(balances)) {
      total += bal;
      if (bal < 0) r.negative.push({ index: op.index, account: acct, balance: bal });
    }
    if (total !== opts.total) r.wrongTotal.push({ index: op.index, total, balances });
  }
  r.valid = r.wrongTotal.length === 0 && r.negative.length === 0 && r.missingAccounts.length === 0;
  return r;
}
