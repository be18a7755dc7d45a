import { ConfigError } from './config/config-error';
import { traceExportEndpoint } from './trace-export';

describe('traceExportEndpoint', () => {
  it('is null without an endpoint: nothing is registered', () => {
    expect(traceExportEndpoint({})).toBeNull();
    expect(traceExportEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' })).toBeNull();
  });

  it('takes the traces endpoint over the general one', () => {
    expect(traceExportEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe('http://collector:4318');
    expect(
      traceExportEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/v1/traces' }),
    ).toBe('https://traces.example/v1/traces');
  });

  it('is null when the SDK or the trace exporter is turned off', () => {
    expect(traceExportEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'TRUE' })).toBeNull();
    expect(traceExportEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' })).toBeNull();
  });

  it('refuses what is not an http(s) URL, naming the variable', () => {
    for (const value of ['collector:4318', 'grpc://collector:4317', 'not a url']) {
      expect(() => traceExportEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: value })).toThrow(ConfigError);
    }
    expect(() => traceExportEndpoint({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'ftp://x' })).toThrow(
      "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: expected an http:// or https:// URL, got 'ftp://x'",
    );
  });
});
