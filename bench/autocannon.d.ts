// The part of autocannon's API bench/serve.ts uses (the package ships no types).
declare module 'autocannon' {
  interface Histogram {
    p50: number;
    p99: number;
  }
  interface Result {
    latency: Histogram;
    errors: number;
    non2xx: number;
  }
  interface RequestSpec {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string;
    setupRequest?: (req: Record<string, unknown>, context: Record<string, unknown>) => Record<string, unknown>;
    onResponse?: (status: number, body: string, context: Record<string, unknown>) => void;
  }
  interface Options {
    url: string;
    connections?: number;
    amount?: number;
    duration?: number;
    timeout?: number;
    requests?: RequestSpec[];
  }
  export default function autocannon(opts: Options): Promise<Result>;
}
