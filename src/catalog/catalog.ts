import { invalidInput, isTwinlakeError } from '../core/errors.ts';
import { FOLDER_NAME_RULE, folderNameProblem } from '../core/names.ts';
import type { TableMetadata } from '../format/iceberg/types.ts';
import type { TableRequirement, TableUpdate } from '../format/iceberg/updates.ts';

/**
 * The Iceberg catalog contract, in the shapes of the REST catalog spec and iceberg-rust: a table is
 * named by a namespace (one or more levels) and a name; a change is requirements plus updates.
 * One contract suite (`test/catalog/catalog-contract.ts`) checks every MUST on every catalog.
 */

export interface TableIdentifier {
  namespace: string[];
  name: string;
}

export interface LoadTableResult {
  metadataLocation: string;
  metadata: TableMetadata;
}

export interface TableCommit {
  requirements: TableRequirement[];
  updates: TableUpdate[];
}

/** A lost race or a failed requirement is an expected outcome, so it is a value, not an error. */
export type CommitResult =
  | {
      status: 'committed';
      metadataLocation: string;
      metadata: TableMetadata;
      /**
       * With `deferFollowUp`: the catalog's writes after the pointer moved (a version hint), for
       * the caller to await beside its own. Never rejects: the commit already happened.
       */
      followUp?: Promise<void>;
    }
  | { status: 'conflict'; reason: string };

export interface CommitOptions {
  /**
   * Return once the pointer moved and hand what the catalog writes after that (`followUp`) to
   * the caller, which awaits it while it writes its own files (the Delta version).
   */
  deferFollowUp?: boolean;
  /**
   * The files the updates name (a snapshot's manifests and manifest list) are still being made
   * durable. The catalog MAY write its own metadata file meanwhile, since nothing reads that file
   * before the pointer names it, but MUST NOT move the pointer before this resolves; when it
   * rejects, nothing is committed, the catalog's new metadata file is removed, and the commit
   * fails with its reason.
   */
  durable?: Promise<void>;
}

export interface Catalog {
  readonly name: string;

  /**
   * The namespaces one level below `parent` (top-level ones without it), sorted. MUST throw
   * `not-found` when `parent` does not exist.
   */
  listNamespaces(parent?: string[]): Promise<string[][]>;
  /** MUST throw `already-exists` when the namespace exists. */
  createNamespace(namespace: string[], properties?: Record<string, string>): Promise<void>;
  namespaceExists(namespace: string[]): Promise<boolean>;
  /** MUST throw `not-found` naming the namespace when it does not exist. */
  loadNamespaceProperties(namespace: string[]): Promise<Record<string, string>>;
  /** MUST throw `not-found` when missing and `invalid-input` when it still holds tables or namespaces. */
  dropNamespace(namespace: string[]): Promise<void>;

  /** The tables directly in a namespace, sorted by name. MUST throw `not-found` for a missing namespace. */
  listTables(namespace: string[]): Promise<TableIdentifier[]>;
  tableExists(id: TableIdentifier): Promise<boolean>;
  /** MUST throw `not-found` naming the table when it does not exist. */
  loadTable(id: TableIdentifier): Promise<LoadTableResult>;
  /**
   * The current metadata file's location, without reading the file (what a Delta read of the
   * table starts from). Optional: catalogs that only hand out parsed metadata lack it. MUST throw
   * `not-found` as loadTable does.
   */
  metadataLocation?(id: TableIdentifier): Promise<string>;
  /**
   * Writes `metadata` as the table's first metadata file and registers it. An empty
   * `metadata.location` asks the catalog for its default location. MUST throw `already-exists`
   * when the table exists and `not-found` when the namespace does not.
   */
  createTable(id: TableIdentifier, metadata: TableMetadata): Promise<LoadTableResult>;
  /**
   * Checks the requirements against the current metadata, applies the updates, writes the new
   * metadata file and swaps the table's pointer to it atomically. A failed requirement or a
   * concurrent commit gives `{status: 'conflict'}` and leaves the table unchanged. MUST throw
   * `not-found` when the table does not exist.
   */
  commitTable(id: TableIdentifier, commit: TableCommit, options?: CommitOptions): Promise<CommitResult>;
  /** Unregisters the table; `purge` also deletes its files. MUST throw `not-found` when missing. */
  dropTable(id: TableIdentifier, options?: { purge?: boolean }): Promise<void>;
  /** Registers an existing metadata file under a new name. Same errors as createTable. */
  registerTable(id: TableIdentifier, metadataLocation: string): Promise<LoadTableResult>;
}

/** `ns.table`, `a.b.table`: the dotted form used by the CLI, Spark and PyIceberg. */
/** Creates the namespace unless it exists (a concurrent creator winning is fine). */
export async function ensureNamespace(catalog: Catalog, namespace: string[]): Promise<void> {
  if (await catalog.namespaceExists(namespace)) return;
  await catalog.createNamespace(namespace).catch((e) => {
    if (!isTwinlakeError(e, 'already-exists')) throw e;
  });
}

export function formatTableIdentifier(id: TableIdentifier): string {
  return [...id.namespace, id.name].join('.');
}

/**
 * Parses `ns.table` or `a.b.table`; every part must be a valid name (see checkNamePart). Names are
 * taken in Unicode NFC, so `café` typed with a composed or a decomposed `é` names one table (and
 * one folder), whatever the keyboard or file system produced.
 */
export function parseTableIdentifier(text: string): TableIdentifier {
  const parts = text.normalize('NFC').split('.');
  if (parts.length < 2) {
    throw invalidInput(`table identifier: expected <namespace>.<table>, found ${JSON.stringify(text)}`, { identifier: text });
  }
  parts.forEach((part, i) => checkNamePart(part, `part ${i + 1} of ${JSON.stringify(text)}`));
  return { namespace: parts.slice(0, -1), name: parts[parts.length - 1]! };
}

/** An identifier built by code, in the NFC form parsed names take (see parseTableIdentifier). */
export function normalizeTableIdentifier(id: TableIdentifier): TableIdentifier {
  return { namespace: id.namespace.map((l) => l.normalize('NFC')), name: id.name.normalize('NFC') };
}

/** Validates an identifier built by code (not parsed), before it reaches SQL or a path. */
export function checkTableIdentifier(id: TableIdentifier): void {
  checkNamespace(id.namespace);
  checkNamePart(id.name, 'table name');
  if (id.name.length > MAX_NAME) throw invalidInput(`table identifier: table name is longer than ${MAX_NAME} characters`, { name: id.name });
}

export function checkNamespace(namespace: string[]): void {
  if (!Array.isArray(namespace) || namespace.length === 0) {
    throw invalidInput(`namespace: expected at least one level, found ${JSON.stringify(namespace)}`);
  }
  namespace.forEach((level, i) => checkNamePart(level, `namespace level ${i + 1}`));
  for (const level of namespace) {
    // Catalogs store a namespace as its levels joined by '.', so a '.' inside a level is ambiguous.
    if (level.includes('.')) throw invalidInput(`namespace: level ${JSON.stringify(level)} contains '.'`, { namespace });
  }
  if (namespace.join('.').length > MAX_NAME) {
    throw invalidInput(`namespace: ${JSON.stringify(namespace.join('.'))} is longer than ${MAX_NAME} characters`, { namespace });
  }
}

/** The JDBC catalog's columns are VARCHAR(255). */
const MAX_NAME = 255;

/** A name becomes a folder of the table location: the rules are core/names.ts's. */
function checkNamePart(part: string, what: string): void {
  const why = folderNameProblem(part);
  if (why) throw invalidInput(`table identifier: ${what} ${JSON.stringify(part)} ${why}; a name must be ${FOLDER_NAME_RULE}`, { part });
}
