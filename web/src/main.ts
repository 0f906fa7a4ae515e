// The web console: a sign-in form, the tables list and a table page, over the management API.
// The token the user signs in with stays in sessionStorage (gone when the tab closes) and goes
// with every API call as a bearer token; the server's static files need none.

import { formatBytes, histogram, partitionBars, timeline, type TimelineEntry } from './charts.ts';

const API = '/api/managed-lakehouse/tables';
const TOKEN_KEY = 'twinlake.console.token';
const OPERATIONS = ['delta_checkpoint', 'compaction', 'snapshot_expiry', 'orphan_cleanup', 'metadata_cleanup', 'full_maintenance'] as const;

class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function api<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  const token = sessionStorage.getItem(TOKEN_KEY);
  const headers: Record<string, string> = { accept: 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, { method: init.method ?? 'GET', headers, body: init.body === undefined ? undefined : JSON.stringify(init.body) });
  const text = await res.text();
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!res.ok) throw new ApiError(res.status, json?.error?.message ?? `${res.status} ${res.statusText}`);
  return json as T;
}

type Child = Node | string | null | undefined | false;

function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}

const app = document.getElementById('app')!;
const signOut = document.getElementById('sign-out') as HTMLButtonElement;

function show(...nodes: Child[]): void {
  app.replaceChildren(...nodes.filter((n): n is Node | string => n !== null && n !== undefined && n !== false));
}

function failure(e: unknown): HTMLElement {
  const status = e instanceof ApiError ? `${e.status} ` : '';
  return h('p', { class: 'error', role: 'alert' }, `${status}${(e as Error).message}`);
}

// ---- sign in ----

function signInPage(message?: string): void {
  signOut.hidden = true;
  const input = h('input', { id: 'token', name: 'token', type: 'password', autocomplete: 'off', placeholder: 'tlk_…', required: '' });
  const error = h('p', { id: 'sign-in-error', class: 'error', role: 'alert' }, message ?? '');
  if (!message) error.hidden = true;
  const form = h('form', { id: 'sign-in', class: 'card narrow' },
    h('h1', {}, 'Sign in'),
    h('p', { class: 'muted' }, 'Paste a token from ', h('code', {}, 'twinlake token create --name NAME --scope read|write|admin'), '. It is kept in this tab only.'),
    h('label', { for: 'token' }, 'Token'),
    input,
    h('button', { type: 'submit' }, 'Sign in'),
    error,
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    try {
      await api(API);
      await route();
    } catch (e) {
      sessionStorage.removeItem(TOKEN_KEY);
      error.textContent = e instanceof ApiError ? `${e.status}: ${e.message}` : (e as Error).message;
      error.hidden = false;
    }
  });
  show(form);
  input.focus();
}

// ---- tables list ----

interface TableSummary {
  tableId: string;
  tableName: string;
  icebergNamespace: string;
  icebergEnabled: boolean;
  deltaEnabled: boolean;
  partitionSpec: string;
  rows: number;
  files: number;
  bytes: number;
  currentSnapshotId: string | null;
  deltaVersion: number | null;
  deltaInStep: boolean | null;
  lastCommitAt: string | null;
  compactionTargetFileSizeBytes: number | null;
}

function formats(t: TableSummary): HTMLElement {
  return h('span', { class: 'formats' }, t.icebergEnabled ? h('span', { class: 'badge iceberg' }, 'Iceberg') : null, t.deltaEnabled ? h('span', { class: 'badge delta' }, 'Delta') : null);
}

function inStep(v: boolean | null): HTMLElement {
  if (v === null) return h('span', { class: 'muted' }, '—');
  return v ? h('span', { class: 'badge ok', title: 'the newest Delta version mirrors the current snapshot' }, '✓ in step') : h('span', { class: 'badge warn', title: 'run twinlake sync to bring Delta up to the current snapshot' }, '✗ behind');
}

function ago(iso: string | null): string {
  if (!iso) return '—';
  const s = Math.round((Date.now() - Date.parse(iso)) / 1000);
  if (s < 60) return `${Math.max(0, s)} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return new Date(iso).toLocaleDateString();
}

async function tablesPage(): Promise<void> {
  const { tables } = await api<{ tables: TableSummary[] }>(API);
  const rows = tables.map((t) =>
    h('tr', { 'data-table-id': t.tableId },
      h('td', {}, h('a', { href: `#/table/${encodeURIComponent(t.tableId)}`, class: 'table-link' }, `${t.icebergNamespace}.${t.tableName}`)),
      h('td', {}, formats(t)),
      h('td', { class: 'num rows' }, t.rows.toLocaleString('en-US')),
      h('td', { class: 'num' }, formatBytes(t.bytes), h('span', { class: 'muted' }, ` · ${t.files} files`)),
      h('td', { title: t.lastCommitAt ?? '' }, ago(t.lastCommitAt)),
      h('td', { class: 'in-step' }, inStep(t.deltaInStep)),
    ),
  );
  show(
    h('h1', {}, 'Tables'),
    tables.length === 0
      ? h('p', { class: 'muted' }, 'No tables yet. Create one with POST ', h('code', {}, API), ' or twinlake write.')
      : h('table', { id: 'tables', class: 'grid' }, h('thead', {}, h('tr', {}, ...['Table', 'Formats', 'Rows', 'Size', 'Last commit', 'Delta'].map((c) => h('th', {}, c)))), h('tbody', {}, ...rows)),
  );
}

// ---- table page ----

interface Field {
  id: number;
  name: string;
  type: unknown;
  required: boolean;
  doc?: string;
}

interface Commit {
  icebergSnapshotId: string | null;
  deltaVersion: number | null;
  operation: string;
  change?: string;
  rowsAdded: number;
  rowsRemoved: number | null;
  filesAdded: number;
  filesRemoved: number;
  timestamp: string;
  deltaInStep: boolean | null;
}

interface Snapshot {
  snapshotId?: string;
  deltaVersion?: number;
  timestamp: string;
  operation: string;
  addedRecords: number;
  totalRecords: number;
}

interface Partition {
  partition: Record<string, unknown>;
  files: number;
  records: number;
  bytes: number;
}

function typeName(t: unknown): string {
  if (typeof t === 'string') return t;
  const o = t as { type?: string; element?: unknown; key?: unknown; value?: unknown; fields?: Field[] };
  if (o.type === 'list') return `list<${typeName(o.element)}>`;
  if (o.type === 'map') return `map<${typeName(o.key)}, ${typeName(o.value)}>`;
  if (o.type === 'struct') return `struct<${(o.fields ?? []).map((f) => `${f.name}: ${typeName(f.type)}`).join(', ')}>`;
  return JSON.stringify(t);
}

function section(title: string, id: string, ...body: Child[]): HTMLElement {
  return h('section', { id, class: 'card' }, h('h2', {}, title), ...body);
}

function partitionLabel(p: Record<string, unknown>): string {
  const parts = Object.entries(p).map(([k, v]) => `${k}=${v === null ? 'null' : String(v)}`);
  return parts.length ? parts.join(', ') : '(unpartitioned)';
}

async function tablePage(tableId: string): Promise<void> {
  const base = `${API}/${encodeURIComponent(tableId)}`;
  const [list, schema, snaps, commits, files, parts] = await Promise.all([
    api<{ tables: TableSummary[] }>(API),
    api<{ formats: string[]; schema: { fields: Field[] }; partitionSpec: string }>(`${base}/schema`),
    api<{ snapshots: Snapshot[] }>(`${base}/snapshots`),
    api<{ commits: Commit[] }>(`${base}/commits?limit=50`),
    api<{ files: { path: string; bytes: number; records: number }[] }>(`${base}/files`),
    api<{ partitions: Partition[] }>(`${base}/partitions`),
  ]);
  const t = list.tables.find((x) => x.tableId === tableId);
  const title = t ? `${t.icebergNamespace}.${t.tableName}` : tableId;
  const partitionFields = schema.partitionSpec ? schema.partitionSpec.split(',').map((s) => s.trim()) : [];
  const sourceOf = (f: string) => /\(([^)]*?)\)\s*$/.exec(f)?.[1]?.split(',').pop()?.trim() ?? f;
  const partitioned = new Set(partitionFields.map(sourceOf));

  const summary = t
    ? h('div', { class: 'facts' },
        fact('Rows', t.rows.toLocaleString('en-US')),
        fact('Size', `${formatBytes(t.bytes)} in ${t.files} files`),
        fact('Formats', formats(t)),
        fact('Delta', inStep(t.deltaInStep)),
        fact('Snapshot', t.currentSnapshotId ?? '—'),
        fact('Delta version', t.deltaVersion === null ? '—' : String(t.deltaVersion)),
        fact('Last commit', ago(t.lastCommitAt)),
      )
    : null;

  const schemaTable = h('table', { id: 'schema', class: 'grid' },
    h('thead', {}, h('tr', {}, ...['ID', 'Field', 'Type', 'Required', ''].map((c) => h('th', {}, c)))),
    h('tbody', {}, ...schema.schema.fields.map((f) =>
      h('tr', {}, h('td', { class: 'num field-id' }, String(f.id)), h('td', {}, h('code', {}, f.name)), h('td', {}, h('code', {}, typeName(f.type))), h('td', {}, f.required ? 'yes' : 'no'), h('td', {}, partitioned.has(f.name) ? h('span', { class: 'badge part' }, 'partition source') : '')),
    )),
  );
  const specLine = h('p', { id: 'partition-spec' }, 'Partition fields: ', partitionFields.length ? h('span', {}, ...partitionFields.map((f) => h('code', { class: 'chip' }, f))) : h('span', { class: 'muted' }, 'none (unpartitioned)'));

  const entries: TimelineEntry[] = [...snaps.snapshots].reverse().map((s) => ({ snapshotId: s.snapshotId ?? null, deltaVersion: s.deltaVersion ?? null, timestamp: s.timestamp, operation: s.operation, addedRecords: s.addedRecords, totalRecords: s.totalRecords }));

  const history = h('table', { id: 'commits', class: 'grid' },
    h('thead', {}, h('tr', {}, ...['When', 'Operation', 'Snapshot', 'Delta', 'Rows +/−', 'Files +/−', 'In step'].map((c) => h('th', {}, c)))),
    h('tbody', {}, ...commits.commits.map((c) =>
      h('tr', {},
        h('td', { title: c.timestamp }, new Date(c.timestamp).toLocaleString()),
        h('td', {}, c.change ? `${c.operation} (${c.change})` : c.operation),
        h('td', {}, h('code', {}, c.icebergSnapshotId ?? '—')),
        h('td', { class: 'num' }, c.deltaVersion === null ? '—' : `v${c.deltaVersion}`),
        h('td', { class: 'num' }, `+${c.rowsAdded}`, c.rowsRemoved ? h('span', { class: 'minus' }, ` −${c.rowsRemoved}`) : null),
        h('td', { class: 'num' }, `+${c.filesAdded}`, c.filesRemoved ? h('span', { class: 'minus' }, ` −${c.filesRemoved}`) : null),
        h('td', {}, inStep(c.deltaInStep)),
      ),
    )),
  );

  const result = h('div', { id: 'maintenance-result', class: 'result', 'aria-live': 'polite' });
  result.hidden = true;
  const buttons = OPERATIONS.map((op) => {
    const b = h('button', { type: 'button', 'data-operation': op, class: op === 'delta_checkpoint' ? 'primary' : '' }, op.replace(/_/g, ' '));
    b.addEventListener('click', async () => {
      for (const x of buttons) x.disabled = true;
      result.hidden = false;
      result.className = 'result';
      result.textContent = `Running ${op}…`;
      try {
        const r = await api<MaintenanceAnswer>(`${base}/maintenance`, { method: 'POST', body: { operation: op } });
        result.className = 'result ok';
        result.replaceChildren(h('strong', {}, `${op}: ${r.status}`), maintenanceSummary(r), r.durationMs !== undefined ? h('span', { class: 'muted' }, ` in ${r.durationMs} ms`) : '');
      } catch (e) {
        result.className = 'result error';
        result.replaceChildren(h('strong', {}, `${op}: `), e instanceof ApiError ? `${e.status} ${e.message}` : (e as Error).message);
      } finally {
        for (const x of buttons) x.disabled = false;
      }
    });
    return b;
  });

  const target = t?.compactionTargetFileSizeBytes ?? undefined;
  show(
    h('p', { class: 'crumbs' }, h('a', { href: '#/' }, '← Tables')),
    h('h1', { id: 'table-title' }, title),
    summary,
    section('Snapshots', 'timeline', h('p', { class: 'muted' }, 'Each Iceberg snapshot (top) with the Delta version that mirrors it (bottom), oldest first.'), entries.length ? h('div', { class: 'scroll' }, timeline(entries)) : h('p', { class: 'muted' }, 'No snapshots yet.')),
    h('div', { class: 'two' },
      section('File sizes', 'histogram', h('p', { class: 'muted' }, `${files.files.length} live data files`), files.files.length ? histogram(files.files.map((f) => f.bytes), target) : h('p', { class: 'muted' }, 'No data files.')),
      section('Partitions', 'partitions', h('p', { class: 'muted' }, `${parts.partitions.length} partition${parts.partitions.length === 1 ? '' : 's'}, largest first`), parts.partitions.length ? h('div', { class: 'scroll' }, partitionBars(parts.partitions.map((p) => ({ label: partitionLabel(p.partition), bytes: p.bytes, files: p.files, records: p.records })))) : h('p', { class: 'muted' }, 'No data files.')),
    ),
    section('Schema', 'schema-section', specLine, schemaTable),
    section('Commit history', 'history', history),
    section('Maintenance', 'maintenance', h('p', { class: 'muted' }, 'Needs an admin token.'), h('div', { class: 'buttons' }, ...buttons), result),
  );
}

interface MaintenanceAnswer {
  status: string;
  durationMs?: number;
  deltaVersion?: number;
  checkpoint?: string;
  filesBefore?: number;
  filesAfter?: number;
  expiredSnapshots?: string[];
  removed?: { files: number; bytes: number };
  steps?: { operation: string; status: string }[];
}

/** One line of what an operation did, from the fields its answer has. */
function maintenanceSummary(r: MaintenanceAnswer): Node | string {
  if (r.checkpoint) return h('span', {}, ` — checkpoint `, h('code', {}, r.checkpoint), ` of Delta version ${r.deltaVersion}`);
  if (r.filesBefore !== undefined) return ` — ${r.filesBefore} → ${r.filesAfter} data files`;
  if (r.expiredSnapshots) return ` — ${r.expiredSnapshots.length} snapshot(s) expired`;
  if (r.removed) return ` — ${r.removed.files} file(s) removed, ${r.removed.bytes} bytes`;
  if (r.steps) return ` — ${r.steps.map((x) => `${x.operation} ${x.status}`).join(', ')}`;
  return '';
}

function fact(label: string, value: Node | string): HTMLElement {
  return h('div', { class: 'fact' }, h('div', { class: 'label' }, label), h('div', { class: 'value' }, value));
}

// ---- routing ----

async function route(): Promise<void> {
  if (!sessionStorage.getItem(TOKEN_KEY)) return signInPage();
  signOut.hidden = false;
  const m = /^#\/table\/(.+)$/.exec(location.hash);
  try {
    if (m) await tablePage(decodeURIComponent(m[1]!));
    else await tablesPage();
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      sessionStorage.removeItem(TOKEN_KEY);
      return signInPage(`${e.status}: ${e.message}`);
    }
    show(h('p', { class: 'crumbs' }, h('a', { href: '#/' }, '← Tables')), failure(e));
  }
}

signOut.addEventListener('click', () => {
  sessionStorage.removeItem(TOKEN_KEY);
  location.hash = '#/';
  signInPage();
});
window.addEventListener('hashchange', () => void route());
// Marks the page ready for anyone waiting on it (the browser tests).
void route().then(() => document.body.setAttribute('data-ready', 'true'));
