import { TwinlakeError } from '../core/errors.ts';

/**
 * Loads a cloud SDK on first use, so users of local tables never load one. The SDKs are
 * dependencies of the package: one that fails to load means a broken install, said as such.
 */
export function loadSdk<T>(store: string, pkg: string, load: () => Promise<T>): Promise<T> {
  return load().catch((cause: unknown) => {
    const why = cause instanceof Error ? cause.message : String(cause);
    throw new TwinlakeError('internal', `${store}: cannot load ${pkg} (${why}); reinstall twinlake's dependencies`, { package: pkg }, { cause });
  });
}
