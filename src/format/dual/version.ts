/** The engine name and version written into commit metadata of both formats. */
export const TWINLAKE_VERSION = '0.1.0';
export const ENGINE_INFO = `twinlake/${TWINLAKE_VERSION}`;
