import { invalidInput } from '../core/errors.ts';
import type { TableIdentifier } from '../catalog/catalog.ts';
import type { TableContext } from './table-context.ts';
import { identString } from './table-context.ts';
import { latestDeltaVersion } from './delta/delta-log.ts';
import type { ObjectStore } from '../io/object-store.ts';

/**
 * Tables never nest (DESIGN.md §10): a table's folder is `<warehouse>/<namespace levels>/<name>`,
 * so `ns.t.data` would be the folder `data/` of table `ns.t`, where cleaning `ns.t` (orphan files,
 * a purge) would delete it, and `ns.t._delta_log` would even become `ns.t`'s Delta log. A new table
 * is refused when its levels extend another table's, or another table's extend its own.
 *
 * Checked when a table is created; two creators racing with nesting names are not caught here.
 */
export async function checkPlacement(ctx: Pick<TableContext, 'catalog' | 'deltaRegistry' | 'ident' | 'io' | 'location'>, opts: { deltaOnly?: boolean } = {}): Promise<void> {
  const levels = [...ctx.ident.namespace, ctx.ident.name];
  const name = identString(ctx.ident);
  // A Delta log already in the new table's folder belongs to a Delta table the catalog does not
  // know (a Delta-only table whose first write died before its name was registered, or another
  // engine's): Iceberg's lineage would start on top of a log holding other rows, and the two
  // formats would disagree. A Delta-only write there continues that log; a two-format table is refused.
  if (!opts.deltaOnly) {
    const { store, key } = ctx.io.storeAt(ctx.location);
    const version = await latestDeltaVersion(store, key);
    // A dropped two-format table leaves its Iceberg metadata beside its log: a new table there
  // replaces both, its first Delta version removing every file of the old one, as before the drop.
  // A writer creating the same table at once commits its Iceberg table before its Delta log.
    if (version !== undefined && !(await holdsIcebergMetadata(store, key)) && !(await ctx.catalog.tableExists(ctx.ident))) {
      throw invalidInput(
        `table ${name}: its folder ${ctx.location} already holds a Delta log (version ${version}) of a table the catalog does not know; write it as a Delta-only table (formats delta) to continue that log, or remove the folder`,
        { table: name, location: ctx.location },
      );
    }
  }
  // Delta-only tables are in the registry, not the catalog: listed once for every check below.
  const deltaTables = (await ctx.deltaRegistry?.list()) ?? [];
  // A table whose folder holds the new one: some shorter prefix of its levels.
  for (let k = 1; k < levels.length - 1; k++) {
    const outer: TableIdentifier = { namespace: levels.slice(0, k), name: levels[k]! };
    if (deltaTables.some((t) => sameLevels(t, outer)) || (await ctx.catalog.tableExists(outer))) throw nested(name, identString(outer), 'inside');
  }
  // Tables below the new one's folder: in the namespace named by all its levels, or deeper.
  const inner = await firstTableUnder(ctx, deltaTables, levels);
  if (inner) throw nested(name, inner, 'around');
  const twin = await caseTwin(ctx, deltaTables, levels);
  if (twin) {
    throw invalidInput(
      `table ${name}: its name differs from table ${twin}'s only in case, and on a case-insensitive file system (macOS, Windows) the two would share one folder, ` +
        `metadata and Delta log; choose another name`,
      { table: name, other: twin },
    );
  }
}

/** Case-insensitive file systems fold case (and APFS and NTFS fold more than ASCII). */
function fold(s: string): string {
  return s.normalize('NFC').toUpperCase().toLowerCase();
}

/** Another table whose levels equal these but for case: the one whose folder these would alias. */
async function caseTwin(ctx: Pick<TableContext, 'catalog'>, deltaTables: readonly TableIdentifier[], levels: string[]): Promise<string | undefined> {
  const same = (a: string[], b: string[]) => a.length === b.length && a.every((l, i) => fold(l) === fold(b[i]!));
  const exact = (a: string[], b: string[]) => a.length === b.length && a.every((l, i) => l === b[i]);
  for (const t of deltaTables) {
    const other = [...t.namespace, t.name];
    if (same(other, levels) && !exact(other, levels)) return identString(t);
  }
  // Namespaces level by level, keeping those equal to the new table's but for case.
  let namespaces: string[][] = [[]];
  for (const level of levels.slice(0, -1)) {
    const next: string[][] = [];
    for (const ns of namespaces) {
      const children = ns.length === 0 ? await ctx.catalog.listNamespaces() : await ctx.catalog.listNamespaces(ns);
      next.push(...children.filter((c) => c.length === ns.length + 1 && fold(c.at(-1)!) === fold(level)));
    }
    if (next.length === 0) return undefined;
    namespaces = next;
  }
  for (const ns of namespaces) {
    for (const t of await ctx.catalog.listTables(ns)) {
      const other = [...t.namespace, t.name];
      if (same(other, levels) && !exact(other, levels)) return identString(t);
    }
  }
  return undefined;
}

function sameLevels(a: TableIdentifier, b: TableIdentifier): boolean {
  return a.name === b.name && a.namespace.length === b.namespace.length && a.namespace.every((l, i) => l === b.namespace[i]);
}

async function firstTableUnder(ctx: Pick<TableContext, 'catalog'>, deltaTables: readonly TableIdentifier[], namespace: string[]): Promise<string | undefined> {
  for (const t of deltaTables) {
    if (t.namespace.length >= namespace.length && namespace.every((l, i) => t.namespace[i] === l)) return identString(t);
  }
  if (!(await ctx.catalog.namespaceExists(namespace))) return undefined;
  const visit = async (ns: string[]): Promise<string | undefined> => {
    const tables = await ctx.catalog.listTables(ns);
    if (tables.length > 0) return identString(tables[0]!);
    for (const child of await ctx.catalog.listNamespaces(ns)) {
      const found = await visit(child);
      if (found) return found;
    }
    return undefined;
  };
  return visit(namespace);
}

function nested(name: string, other: string, how: 'inside' | 'around'): Error {
  const where =
    how === 'inside'
      ? `its folder would lie inside the folder of table ${other}`
      : `its folder would hold the folder of table ${other}`;
  return invalidInput(`table ${name}: ${where}, and tables never nest (cleaning one would delete the other's files); choose another name`, {
    table: name,
    other,
  });
}

/** Whether a table's folder holds Iceberg metadata files (a dropped two-format table's leftovers). */
async function holdsIcebergMetadata(store: ObjectStore, tableRoot: string): Promise<boolean> {
  const prefix = tableRoot === '' ? 'metadata/' : `${tableRoot.replace(/\/+$/, '')}/metadata/`;
  for await (const o of store.list(prefix)) if (o.path.endsWith('.metadata.json')) return true;
  return false;
}
