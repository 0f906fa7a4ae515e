import { isTwinlakeError } from '../core/errors.ts';
import type { Lakehouse } from '../table/lakehouse.ts';
import type { Table } from '../table/table.ts';
import { HttpError } from './http-errors.ts';

/**
 * `tableId` → table. The ID is the table's UUID (Iceberg's `table-uuid`, or the Delta log's
 * `metaData.id` for a Delta-only table): it is fixed at creation, survives a rename and is never
 * reused by a table dropped and created again under the same name, so a pipeline that posts to
 * an ID cannot land in the wrong table. Names are looked up once and remembered; a name that no
 * longer carries its ID (renamed, dropped) is looked up again.
 */
export class TableIndex {
  private readonly names = new Map<string, string>();

  constructor(private readonly lake: Lakehouse) {}

  /** The UUID of the table of that name. */
  async idOf(name: string): Promise<string> {
    const table = this.lake.table(name);
    try {
      return (await table.metadata())['table-uuid'];
    } catch (e) {
      // A Delta-only table has no Iceberg metadata: its ID is the Delta log's.
      if (isTwinlakeError(e, 'not-found') && (await table.exists())) return (await table.describe()).tableUuid;
      throw e;
    }
  }

  remember(id: string, name: string): void {
    this.names.set(id, name);
  }

  async resolve(tableId: string): Promise<{ name: string; table: Table }> {
    const known = this.names.get(tableId);
    if (known !== undefined && (await this.idOf(known).catch(() => undefined)) === tableId) return { name: known, table: this.lake.table(known) };
    this.names.clear();
    for (const name of await this.lake.listTables()) {
      const id = await this.idOf(name).catch(() => undefined);
      if (id !== undefined) this.names.set(id, name);
    }
    const name = this.names.get(tableId);
    if (name === undefined) throw new HttpError(404, `table: no table with tableId ${JSON.stringify(tableId)}`, 'NoSuchTableException');
    return { name, table: this.lake.table(name) };
  }
}
