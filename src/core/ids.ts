import { randomBytes, randomUUID } from 'node:crypto';

/** A random UUID (v4), as used in Iceberg `table-uuid` and file names. */
export function newUuid(): string {
  return randomUUID();
}

/** A random positive 63-bit snapshot ID, as Iceberg writers generate them. */
export function newSnapshotId(): bigint {
  const bytes = randomBytes(8);
  bytes[0]! &= 0x7f;
  const id = bytes.readBigUInt64BE(0);
  return id === 0n ? 1n : id;
}
