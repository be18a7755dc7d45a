import { McpConfigError } from './mcp-errors';
import { parseMcpConfig } from './mcp-server-config';

/** The example of interface.md. */
const EXAMPLE = {
  servers: [
    { id: 1, name: 'demo', type: 'stdio', command: 'node', args: ['dist/demo/mcp-demo-server.js'], env: {} },
    { id: 2, name: 'web', type: 'http', url: 'http://127.0.0.1:9000/mcp' },
  ],
};

function stdio(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { id: 1, name: 'demo', type: 'stdio', command: 'node', ...overrides };
}

function http(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { id: 2, name: 'web', type: 'http', url: 'http://127.0.0.1:9000/mcp', ...overrides };
}

function configError(json: unknown): McpConfigError {
  try {
    parseMcpConfig(json);
  } catch (error) {
    if (error instanceof McpConfigError) return error;
    throw error;
  }
  throw new Error('expected parseMcpConfig to throw');
}

describe('parseMcpConfig', () => {
  it('accepts the documented format', () => {
    expect(parseMcpConfig(EXAMPLE)).toEqual([
      { id: 1, name: 'demo', type: 'stdio', command: 'node', args: ['dist/demo/mcp-demo-server.js'], env: {} },
      { id: 2, name: 'web', type: 'http', url: 'http://127.0.0.1:9000/mcp' },
    ]);
  });

  it('defaults missing args and env of a stdio server to empty', () => {
    expect(parseMcpConfig({ servers: [stdio()] })).toEqual([
      { id: 1, name: 'demo', type: 'stdio', command: 'node', args: [], env: {} },
    ]);
  });

  it('accepts timeouts on servers of either type, and leaves out those not given', () => {
    const [local, remote] = parseMcpConfig({
      servers: [
        stdio({ callTimeoutMs: 5_000, connectTimeoutMs: 2_000, maxTotalTimeoutMs: 3_600_000 }),
        http({ callTimeoutMs: 120_000 }),
      ],
    });

    expect(local).toMatchObject({ callTimeoutMs: 5_000, connectTimeoutMs: 2_000, maxTotalTimeoutMs: 3_600_000 });
    expect(remote).toEqual({ id: 2, name: 'web', type: 'http', url: 'http://127.0.0.1:9000/mcp', callTimeoutMs: 120_000 });
    expect(parseMcpConfig({ servers: [stdio()] })[0]).not.toHaveProperty('callTimeoutMs');
  });

  it('accepts an empty server list', () => {
    expect(parseMcpConfig({ servers: [] })).toEqual([]);
  });

  it('keeps an env variable named __proto__ as a plain entry', () => {
    const [server] = parseMcpConfig(JSON.parse('{"servers":[{"id":1,"name":"a","type":"stdio","command":"x","env":{"__proto__":"v"}}]}'));

    expect(Object.getPrototypeOf(server.env)).toBe(Object.prototype);
    expect(Object.keys(server.env!)).toEqual(['__proto__']);
  });

  describe('when the file is malformed', () => {
    it.each<[string, unknown, string | null, string]>([
      ['the root is not an object', [], null, "expected a JSON object with a 'servers' array, got array"],
      ['servers is missing', {}, 'servers', 'expected an array, got undefined'],
      ['servers is not an array', { servers: {} }, 'servers', 'expected an array, got object'],
      ['an entry is not an object', { servers: ['demo'] }, 'servers[0]', 'expected an object, got string'],
      ['the id is missing', { servers: [stdio({ id: undefined })] }, 'servers[0].id', 'expected a positive whole number, got undefined'],
      ['the id is a string', { servers: [stdio({ id: '1' })] }, 'servers[0].id', 'got "1"'],
      ['the id is not whole', { servers: [stdio({ id: 1.5 })] }, 'servers[0].id', 'got 1.5'],
      ['the id is zero', { servers: [stdio({ id: 0 })] }, 'servers[0].id', 'got 0'],
      ['the name is missing', { servers: [stdio({ name: undefined })] }, 'servers[0].name', 'got undefined'],
      ['the name has a space', { servers: [stdio({ name: 'my server' })] }, 'servers[0].name', '"my server"'],
      ['the name is empty', { servers: [stdio({ name: '' })] }, 'servers[0].name', 'non-empty'],
      ['the type is unknown', { servers: [stdio({ type: 'grpc' })] }, 'servers[0].type', `expected 'stdio' or 'http', got "grpc"`],
      ['a stdio command is missing', { servers: [stdio({ command: undefined })] }, 'servers[0].command', 'non-empty string'],
      ['a stdio command is blank', { servers: [stdio({ command: '  ' })] }, 'servers[0].command', 'non-empty string'],
      ['args is a string', { servers: [stdio({ args: '--verbose' })] }, 'servers[0].args', 'array of strings'],
      ['an arg is a number', { servers: [stdio({ args: ['a', 2] })] }, 'servers[0].args[1]', 'got 2'],
      ['env is an array', { servers: [stdio({ env: ['A=1'] })] }, 'servers[0].env', 'got array'],
      ['an env value is a number', { servers: [stdio({ env: { PORT: 80 } })] }, 'servers[0].env.PORT', 'got 80'],
      ['an http url is missing', { servers: [http({ url: undefined })] }, 'servers[0].url', 'expected a string, got undefined'],
      ['an http url is not a URL', { servers: [http({ url: 'localhost:9000' })] }, 'servers[0].url', 'expected an http or https URL, got "localhost:9000"'],
      ['an http url is garbage', { servers: [http({ url: 'not a url' })] }, 'servers[0].url', 'not a valid URL'],
      ['a stdio server has a url', { servers: [stdio({ url: 'http://x' })] }, 'servers[0].url', "not a field of a 'stdio' server (its fields: id, name, type, trusted, callTimeoutMs, connectTimeoutMs, maxTotalTimeoutMs, command, args, env)"],
      ['an http server has a command', { servers: [http({ command: 'node' })] }, 'servers[0].command', "not a field of a 'http' server (its fields: id, name, type, trusted, callTimeoutMs, connectTimeoutMs, maxTotalTimeoutMs, url)"],
      ['a field is misspelt', { servers: [stdio({ cmd: 'node' })] }, 'servers[0].cmd', 'not a field'],
      ['the second entry is bad', { servers: [stdio(), http({ id: -2 })] }, 'servers[1].id', 'got -2'],
      ['callTimeoutMs is a string', { servers: [stdio({ callTimeoutMs: '5000' })] }, 'servers[0].callTimeoutMs', 'got "5000"'],
      ['callTimeoutMs is zero', { servers: [http({ callTimeoutMs: 0 })] }, 'servers[0].callTimeoutMs', 'whole number of milliseconds'],
      ['connectTimeoutMs is not whole', { servers: [stdio({ connectTimeoutMs: 1.5 })] }, 'servers[0].connectTimeoutMs', 'got 1.5'],
      ['connectTimeoutMs is null', { servers: [stdio({ connectTimeoutMs: null })] }, 'servers[0].connectTimeoutMs', 'got null'],
      ['maxTotalTimeoutMs is beyond a timer', { servers: [http({ maxTotalTimeoutMs: 2 ** 31 })] }, 'servers[0].maxTotalTimeoutMs', 'from 1 to 2147483647'],
      [
        'maxTotalTimeoutMs is less than callTimeoutMs',
        { servers: [stdio({ callTimeoutMs: 5_000, maxTotalTimeoutMs: 1_000 })] },
        'servers[0].maxTotalTimeoutMs',
        'must not be less than servers[0].callTimeoutMs (5000), got 1000',
      ],
      ['a timeout is misspelt', { servers: [stdio({ callTimeout: 5_000 })] }, 'servers[0].callTimeout', 'not a field'],
    ])('rejects it when %s, naming the field', (_case, json, field, detail) => {
      const error = configError(json);

      expect(error.field).toBe(field);
      // The field first, then what is wrong with it: `servers[0].type: expected …`.
      expect(error.message.startsWith(field === null ? 'expected' : `${field}: `)).toBe(true);
      expect(error.message).toContain(detail);
    });

    it('rejects a duplicate id, naming both entries', () => {
      const error = configError({ servers: [stdio(), http({ id: 1 })] });

      expect(error.field).toBe('servers[1].id');
      expect(error.message).toBe('servers[1].id: 1 is already used by servers[0]');
    });

    it('rejects a duplicate name, naming both entries', () => {
      const error = configError({ servers: [stdio(), http({ name: 'demo' })] });

      expect(error.field).toBe('servers[1].name');
      expect(error.message).toBe("servers[1].name: 'demo' is already used by servers[0]");
    });
  });
});
