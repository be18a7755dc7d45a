import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { McpConfigError } from './mcp-errors';
import { loadMcpConfigFile, parseMcpConfig } from './mcp-server-config';

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
      ['the root is not an object', [], null, 'got array'],
      ['servers is missing', {}, 'servers', "'servers' must be an array"],
      ['servers is not an array', { servers: {} }, 'servers', 'got object'],
      ['an entry is not an object', { servers: ['demo'] }, 'servers[0]', 'servers[0] must be an object'],
      ['the id is missing', { servers: [stdio({ id: undefined })] }, 'servers[0].id', 'positive integer'],
      ['the id is a string', { servers: [stdio({ id: '1' })] }, 'servers[0].id', 'got "1"'],
      ['the id is not whole', { servers: [stdio({ id: 1.5 })] }, 'servers[0].id', 'got 1.5'],
      ['the id is zero', { servers: [stdio({ id: 0 })] }, 'servers[0].id', 'got 0'],
      ['the name is missing', { servers: [stdio({ name: undefined })] }, 'servers[0].name', 'got undefined'],
      ['the name has a space', { servers: [stdio({ name: 'my server' })] }, 'servers[0].name', '"my server"'],
      ['the name is empty', { servers: [stdio({ name: '' })] }, 'servers[0].name', 'non-empty'],
      ['the type is unknown', { servers: [stdio({ type: 'sse' })] }, 'servers[0].type', "'stdio' or 'http'"],
      ['a stdio command is missing', { servers: [stdio({ command: undefined })] }, 'servers[0].command', 'non-empty string'],
      ['a stdio command is blank', { servers: [stdio({ command: '  ' })] }, 'servers[0].command', 'non-empty string'],
      ['args is a string', { servers: [stdio({ args: '--verbose' })] }, 'servers[0].args', 'array of strings'],
      ['an arg is a number', { servers: [stdio({ args: ['a', 2] })] }, 'servers[0].args[1]', 'got 2'],
      ['env is an array', { servers: [stdio({ env: ['A=1'] })] }, 'servers[0].env', 'got array'],
      ['an env value is a number', { servers: [stdio({ env: { PORT: 80 } })] }, 'servers[0].env.PORT', 'got 80'],
      ['an http url is missing', { servers: [http({ url: undefined })] }, 'servers[0].url', 'must be a string'],
      ['an http url is not a URL', { servers: [http({ url: 'localhost:9000' })] }, 'servers[0].url', 'http or https'],
      ['an http url is garbage', { servers: [http({ url: 'not a url' })] }, 'servers[0].url', 'not a valid URL'],
      ['a stdio server has a url', { servers: [stdio({ url: 'http://x' })] }, 'servers[0].url', "not a field of a 'stdio' server"],
      ['an http server has a command', { servers: [http({ command: 'node' })] }, 'servers[0].command', "not a field of a 'http' server"],
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
        'must not be less than servers[0].callTimeoutMs (5000)',
      ],
      ['a timeout is misspelt', { servers: [stdio({ callTimeout: 5_000 })] }, 'servers[0].callTimeout', 'not a field'],
    ])('rejects it when %s, naming the field', (_case, json, field, detail) => {
      const error = configError(json);

      expect(error.field).toBe(field);
      if (field !== null) expect(error.message).toContain(field);
      expect(error.message).toContain(detail);
    });

    it('rejects a duplicate id, naming both entries', () => {
      const error = configError({ servers: [stdio(), http({ id: 1 })] });

      expect(error.field).toBe('servers[1].id');
      expect(error.message).toBe('servers[1].id 1 is already used by servers[0]');
    });

    it('rejects a duplicate name, naming both entries', () => {
      const error = configError({ servers: [stdio(), http({ name: 'demo' })] });

      expect(error.field).toBe('servers[1].name');
      expect(error.message).toBe("servers[1].name 'demo' is already used by servers[0]");
    });
  });
});

describe('loadMcpConfigFile', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'harness-mcp-config-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function write(content: string): string {
    const file = path.join(dir, 'mcp.json');
    writeFileSync(file, content);
    return file;
  }

  it('reads and validates a file', () => {
    expect(loadMcpConfigFile(write(JSON.stringify(EXAMPLE))).map((server) => server.name)).toEqual(['demo', 'web']);
  });

  it('names the file when it is missing', () => {
    const missing = path.join(dir, 'absent.json');

    expect(() => loadMcpConfigFile(missing)).toThrow(new RegExp(`^Cannot read MCP config file ${escape(missing)}`));
  });

  it('names the file when it is not JSON', () => {
    const file = write('{"servers": [');

    expect(() => loadMcpConfigFile(file)).toThrow(`MCP config file ${file} is not valid JSON`);
  });

  it('names the file and keeps the field when an entry is invalid', () => {
    const file = write(JSON.stringify({ servers: [stdio({ name: 'bad name' })] }));

    let caught: unknown;
    try {
      loadMcpConfigFile(file);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(McpConfigError);
    expect((caught as McpConfigError).message).toMatch(new RegExp(`^${escape(file)}: servers\\[0\\]\\.name`));
    expect((caught as McpConfigError).field).toBe('servers[0].name');
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
