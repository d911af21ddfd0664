/** Column families on the wire (common.proto ColumnFamilyPB) and back, checked (docs/cells.md). */
import { checkFamily, type ColumnFamily } from '../common/column-families';
import type { ColumnFamilyPB } from './service-methods';

export function familyToPb(f: ColumnFamily): ColumnFamilyPB {
  return { name: f.name, versions: f.versions, minVersions: f.minVersions, ttlSec: BigInt(f.ttlSec), keepDeletedCells: f.keepDeletedCells, durability: f.durability ?? '' };
}

/** Untrusted input: INVALID_ARGUMENT naming the part on a bad field. */
export function familyFromPb(p: ColumnFamilyPB): ColumnFamily {
  return checkFamily({ name: p.name ?? '', versions: p.versions ?? 0, minVersions: p.minVersions ?? 0, ttlSec: p.ttlSec ?? 0n, keepDeletedCells: p.keepDeletedCells ?? '', durability: p.durability ?? '' });
}

export function familiesFromPb(ps: readonly ColumnFamilyPB[] | null | undefined): ColumnFamily[] | undefined {
  return ps && ps.length > 0 ? ps.map(familyFromPb) : undefined;
}
