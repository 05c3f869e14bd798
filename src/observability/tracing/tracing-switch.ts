/**
 * Whether this process traces, decided from the standard OpenTelemetry variables before
 * anything of OpenTelemetry is loaded: with tracing off, the server never imports it, so
 * it costs no start-up time, no memory and nothing on the request path.
 */
import type { Tracing } from './tracing.js';

/** The variables that decide whether tracing starts (the SDK itself reads many more). */
type TracingEnv = Partial<Record<'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' | 'OTEL_SDK_DISABLED' | 'OTEL_TRACES_EXPORTER', string>>;

/**
 * True when the environment asks for traces: an OTLP endpoint is set (the shared
 * `OTEL_EXPORTER_OTLP_ENDPOINT`, or the traces-only `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`),
 * and neither `OTEL_SDK_DISABLED=true` nor `OTEL_TRACES_EXPORTER=none` turns the SDK off
 * (the SDK's own reading of those two).
 */
export function tracingRequested(env: TracingEnv): boolean {
  const endpoint = (env.OTEL_EXPORTER_OTLP_ENDPOINT ?? '').trim() || (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? '').trim();
  if (!endpoint) return false;
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '' && name !== 'null');
  // As the SDK reads it: "none" alone turns tracing off; beside other exporters it is ignored.
  return !(exporters.length === 1 && exporters[0] === 'none');
}

/**
 * Start tracing when the environment asks for it (see `tracingRequested`), else null.
 * Call it before the server's modules are imported: it patches `node:http` and
 * `cassandra-driver` for their instrumentations.
 */
export async function startTracingFromEnv(env: TracingEnv = process.env): Promise<Tracing | null> {
  if (!tracingRequested(env)) return null;
  const { startTracing } = await import('./tracing.js');
  return startTracing();
}
