// Metrics for the benchmarks: one JSON line per measurement, appended to the file named
// by ADK_ACP_VSCODE_METRICS; nothing at all when it is unset. Best effort: a write
// that fails is dropped, never an error for the user.

export type Metric = (name: string, value: number, extra?: Record<string, unknown>) => void;

export interface MetricsSink {
  /** The metrics file ($ADK_ACP_VSCODE_METRICS), or undefined for none. */
  file: string | undefined;
  append(file: string, line: string): void;
  now(): number;
}

export function fileMetrics(sink: MetricsSink): Metric {
  return (name, value, extra = {}) => {
    if (!sink.file) return;
    try {
      sink.append(sink.file, JSON.stringify({ name, value, at: sink.now(), ...extra }) + "\n");
    } catch {
      // metrics are best effort
    }
  };
}
