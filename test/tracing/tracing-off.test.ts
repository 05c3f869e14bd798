/**
 * Tracing, off: which environments turn it on, that without one no tracer provider is
 * registered (every span is the API's no-op), and that the server reaches OpenTelemetry
 * only through the switch's dynamic import, so with tracing off none of it is loaded.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { trace } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { startTracingFromEnv, tracingRequested } from '../../src/observability/tracing/tracing-switch.js';

const ROOT = join(import.meta.dirname, '..', '..');

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Run-time imports of a file (static and dynamic; `import type` is erased). */
function runtimeImports(source: string): string[] {
  const found: string[] = [];
  for (const m of source.matchAll(/^\s*(import|export)\s+(type\s+)?([^;]*?)\s+from\s+'([^']+)'/gms)) if (!m[2]) found.push(m[4]!);
  for (const m of source.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)) found.push(`dynamic:${m[1]!}`);
  return found;
}

describe('tracing, off', () => {
  it.each([
    [{}, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: '' }, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' }, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, true],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }, true],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'false' }, true],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' }, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'otlp,none' }, true],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'console' }, true],
    [{ OTEL_TRACES_EXPORTER: 'console' }, false],
  ])('with %o, tracing is %s', (env, on) => {
    expect(tracingRequested(env)).toBe(on);
  });

  it('registers no tracer provider without an OTLP endpoint: every span is a no-op', async () => {
    expect(await startTracingFromEnv({ OTEL_TRACES_EXPORTER: 'otlp' })).toBeNull();
    const span = trace.getTracer('probe').startSpan('probe');
    expect(span.isRecording()).toBe(false);
    expect(span.spanContext().traceId).toBe('00000000000000000000000000000000');
    // The API's global registry holds no tracer provider (registering one creates it).
    expect((globalThis as Record<symbol, unknown>)[Symbol.for('opentelemetry.js.api.1')]).toBeUndefined();
  });

  it('loads OpenTelemetry only through the switch: src/observability/tracing alone imports it, and the server imports src/observability/tracing for types only', () => {
    const files = sourceFiles('src');
    const otel = files.filter((f) => runtimeImports(readFileSync(join(ROOT, f), 'utf8')).some((s) => s.startsWith('@opentelemetry/')));
    expect(otel.length).toBeGreaterThan(0);
    expect(otel.filter((f) => !f.startsWith('src/observability/tracing/'))).toEqual([]);
    expect(otel).not.toContain('src/observability/tracing/tracing-switch.ts');

    // Outside src/observability/tracing, only main.ts imports a value from it: the switch, which imports the rest dynamically.
    const intoTracing = files
      .filter((f) => !f.startsWith('src/observability/tracing/'))
      .flatMap((f) => runtimeImports(readFileSync(join(ROOT, f), 'utf8')).filter((s) => /\/tracing\//.test(s)).map((s) => `${f} -> ${s}`));
    expect(intoTracing).toEqual(['src/main.ts -> ./observability/tracing/tracing-switch.js']);
    expect(runtimeImports(readFileSync(join(ROOT, 'src/observability/tracing/tracing-switch.ts'), 'utf8'))).toEqual(['dynamic:./tracing.js']);
  });
});
