import type { IcebergType, NestedField, StructType } from '../iceberg/types.ts';

/**
 * Physical column names (DESIGN.md §2): a column's Parquet name is its name when it was first
 * added and stays unique for the table's whole life, so a dropped-then-re-added `x` gets a new
 * one. `existing` keeps the names of every field ever assigned (dropped ones too); the result
 * extends it with names for fields that have none yet.
 */
export function assignPhysicalNames(schema: StructType, existing: Map<number, string>): Map<number, string> {
  const out = new Map(existing);
  const live = new Set<number>();
  collectIds(schema, live);
  // Names held by fields no longer in the schema stay reserved at every level.
  const retired = new Set<string>();
  for (const [id, name] of existing) if (!live.has(id)) retired.add(name);

  const visitStruct = (struct: StructType) => {
    const taken = new Set<string>(retired);
    for (const f of struct.fields) {
      const name = out.get(f.id);
      if (name !== undefined) taken.add(name);
    }
    for (const f of struct.fields) {
      if (!out.has(f.id)) {
        let name = f.name;
        if (taken.has(name)) name = `${f.name}_${f.id}`;
        let n = 2;
        while (taken.has(name)) name = `${f.name}_${f.id}_${n++}`;
        out.set(f.id, name);
        taken.add(name);
      }
      visitType(f.type);
    }
  };
  const visitType = (t: IcebergType) => {
    if (typeof t === 'string') return;
    if (t.type === 'struct') visitStruct(t);
    else if (t.type === 'list') visitType(t.element);
    else visitType(t.key), visitType(t.value);
  };
  visitStruct(schema);
  return out;
}

function collectIds(t: IcebergType, into: Set<number>): void {
  if (typeof t === 'string') return;
  if (t.type === 'struct') {
    for (const f of t.fields as NestedField[]) {
      into.add(f.id);
      collectIds(f.type, into);
    }
  } else if (t.type === 'list') {
    into.add(t['element-id']);
    collectIds(t.element, into);
  } else {
    into.add(t['key-id']);
    into.add(t['value-id']);
    collectIds(t.key, into);
    collectIds(t.value, into);
  }
}
