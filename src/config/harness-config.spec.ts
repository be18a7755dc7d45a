import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { createLlmModelConfigFromEnv } from '../harness/llm/llm-adapter-facade';
import { DEFAULT_LLM_LIMITS } from '../harness/llm/llm-limits';
import { defaultScenario } from '../harness/llm/scripted-default-scenario';
import { ConfigError, loadHarnessConfig } from './harness-config';

const TOKENS = { HARNESS_TOKENS: 'tok=1' };

describe('loadHarnessConfig', () => {
  describe('the LLM_* variables', () => {
    it.each([
      [{}, 'scripted', 'scripted'],
      [{ LLM_BASE_URL: 'http://127.0.0.1:8080/v1' }, 'openai', 'gpt-4o-mini'],
      [{ LLM_PROTOCOL: 'anthropic' }, 'anthropic', 'claude-haiku-4-5'],
      [{ LLM_PROTOCOL: 'ANTHROPIC', LLM_BASE_URL: 'http://127.0.0.1:1/v1' }, 'anthropic', 'claude-haiku-4-5'],
      [{ LLM_PROTOCOL: 'responses' }, 'responses', 'gpt-4o-mini'],
      [{ LLM_PROTOCOL: 'openai' }, 'openai', 'gpt-4o-mini'],
      [{ LLM_PROTOCOL: 'gemini', LLM_BASE_URL: 'http://127.0.0.1:1/v1' }, 'openai', 'gpt-4o-mini'],
      [{ LLM_PROTOCOL: 'anthropic', LLM_MODEL: 'claude-opus-4-1' }, 'anthropic', 'claude-opus-4-1'],
    ])('%j → protocol %s, model %s', (env, protocol, model) => {
      const { llm } = loadHarnessConfig({ ...TOKENS, ...env });
      expect(llm).toEqual(expect.objectContaining({ protocol, model }));
    });

    it('read the same as the facade reads them, so the server routes what it was configured with', () => {
      const env = { ...TOKENS, LLM_PROTOCOL: ' Responses ', LLM_BASE_URL: 'http://x/v1', LLM_API_KEY: 'k', LLM_SCRIPT: ' ' };
      const { llm } = loadHarnessConfig(env);
      expect(llm).toEqual({ ...createLlmModelConfigFromEnv(env), scenario: defaultScenario(), ...DEFAULT_LLM_LIMITS });
      expect(llm).toEqual({
        protocol: 'responses',
        baseUrl: 'http://x/v1',
        apiKey: 'k',
        model: 'gpt-4o-mini',
        scenario: defaultScenario(),
        headersTimeoutMs: 60_000,
        idleTimeoutMs: 120_000,
        maxAnswerChars: 1_000_000,
      });
    });
  });

  describe('the limits on a model call', () => {
    it('default to a minute for headers, two minutes of silence and a million characters', () => {
      expect(loadHarnessConfig({ ...TOKENS, LLM_HEADERS_TIMEOUT_MS: ' ', LLM_IDLE_TIMEOUT_MS: '' }).llm).toMatchObject({
        headersTimeoutMs: 60_000,
        idleTimeoutMs: 120_000,
        maxAnswerChars: 1_000_000,
      });
    });

    it('are read from LLM_HEADERS_TIMEOUT_MS, LLM_IDLE_TIMEOUT_MS and LLM_MAX_ANSWER_CHARS', () => {
      const env = { ...TOKENS, LLM_HEADERS_TIMEOUT_MS: '300', LLM_IDLE_TIMEOUT_MS: ' 2147483647 ', LLM_MAX_ANSWER_CHARS: '1' };
      expect(loadHarnessConfig(env).llm).toMatchObject({ headersTimeoutMs: 300, idleTimeoutMs: 2_147_483_647, maxAnswerChars: 1 });
    });

    it.each([
      ['LLM_HEADERS_TIMEOUT_MS', '0', "expected a whole number of milliseconds (1 to 2147483647), got '0'"],
      ['LLM_HEADERS_TIMEOUT_MS', '5s', "expected a whole number of milliseconds (1 to 2147483647), got '5s'"],
      ['LLM_IDLE_TIMEOUT_MS', '-1', "expected a whole number of milliseconds (1 to 2147483647), got '-1'"],
      ['LLM_IDLE_TIMEOUT_MS', '2147483648', "expected a whole number of milliseconds (1 to 2147483647), got '2147483648'"],
      ['LLM_MAX_ANSWER_CHARS', '0', "expected a whole number of characters (1 or more), got '0'"],
      ['LLM_MAX_ANSWER_CHARS', '1e6', "expected a whole number of characters (1 or more), got '1e6'"],
      ['LLM_MAX_ANSWER_CHARS', '99999999999999999999', "expected a whole number of characters (1 or more), got '99999999999999999999'"],
    ])('refuses %s=%j, naming the variable', (variable, value, message) => {
      const load = () => loadHarnessConfig({ ...TOKENS, [variable]: value });
      expect(load).toThrow(ConfigError);
      expect(load).toThrow(`${variable}: ${message}`);
    });
  });

  describe('HARNESS_SHELL_ENV', () => {
    it.each([
      [undefined, []],
      ['', []],
      ['GOPATH', ['GOPATH']],
      [' GOPATH , NPM_CONFIG_CACHE,,_x1 ', ['GOPATH', 'NPM_CONFIG_CACHE', '_x1']],
      ['GOPATH,GOPATH', ['GOPATH']],
    ])('%j → %j', (value, names) => {
      expect(loadHarnessConfig({ ...TOKENS, HARNESS_SHELL_ENV: value }).shellEnv).toEqual(names);
    });

    it.each([
      ['GO PATH', "expected comma-separated variable names, got 'GO PATH'"],
      ['1ABC', "expected comma-separated variable names, got '1ABC'"],
      ['PATH=/bin', "expected comma-separated variable names, got 'PATH=/bin'"],
      ['PATH,HARNESS_TOKENS', "HARNESS_TOKENS holds the server's own secrets and is never passed to commands"],
      ['LLM_API_KEY', "LLM_API_KEY holds the server's own secrets and is never passed to commands"],
    ])('refuses %j, naming the variable', (value, message) => {
      const load = () => loadHarnessConfig({ ...TOKENS, HARNESS_SHELL_ENV: value });
      expect(load).toThrow(ConfigError);
      expect(load).toThrow(`HARNESS_SHELL_ENV: ${message}`);
    });
  });

  describe('HARNESS_SHELL_ISOLATION', () => {
    it.each([
      [undefined, 'auto'],
      [' ', 'auto'],
      ['auto', 'auto'],
      ['namespace', 'namespace'],
      [' Namespace ', 'namespace'],
      ['NONE', 'none'],
    ])('%j → %s', (value, mode) => {
      expect(loadHarnessConfig({ ...TOKENS, HARNESS_SHELL_ISOLATION: value }).shellIsolation).toBe(mode);
    });

    it.each(['on', 'sandbox', 'namespaces'])('refuses %j, naming the variable', (value) => {
      const load = () => loadHarnessConfig({ ...TOKENS, HARNESS_SHELL_ISOLATION: value });
      expect(load).toThrow(ConfigError);
      expect(load).toThrow(`HARNESS_SHELL_ISOLATION: expected 'auto', 'namespace' or 'none', got '${value}'`);
    });
  });

  describe('HARNESS_EVENT_LOG_MAX_PER_SESSION', () => {
    it.each([
      [undefined, 10_000],
      ['100', 100],
      ['250000', 250_000],
    ])('%j → %d', (value, events) => {
      expect(loadHarnessConfig({ ...TOKENS, HARNESS_EVENT_LOG_MAX_PER_SESSION: value }).eventLogMaxPerSession).toBe(events);
    });

    it.each(['0', '99', '-5', 'lots'])('refuses %j, naming the variable', (value) => {
      expect(() => loadHarnessConfig({ ...TOKENS, HARNESS_EVENT_LOG_MAX_PER_SESSION: value })).toThrow(/^HARNESS_EVENT_LOG_MAX_PER_SESSION: expected a whole number of events \(100 or more\)/);
    });
  });

  describe('HARNESS_MCP_IDLE_TIMEOUT_MS', () => {
    it.each([
      [undefined, 600_000],
      ['', 600_000],
      ['0', 0],
      [' 90000 ', 90_000],
    ])('%j → %d', (value, ms) => {
      expect(loadHarnessConfig({ ...TOKENS, HARNESS_MCP_IDLE_TIMEOUT_MS: value }).mcpIdleTimeoutMs).toBe(ms);
    });

    it.each(['-1', '1.5', '10m', '1e6'])('refuses %j, naming the variable', (value) => {
      const load = () => loadHarnessConfig({ ...TOKENS, HARNESS_MCP_IDLE_TIMEOUT_MS: value });
      expect(load).toThrow(ConfigError);
      expect(load).toThrow(`HARNESS_MCP_IDLE_TIMEOUT_MS: expected a whole number of milliseconds (0 or more), got '${value}'`);
    });
  });

  describe('files that variables name', () => {
    let dir: string;
    beforeEach(() => {
      dir = mkdtempSync(path.join(tmpdir(), 'harness-config-'));
    });
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    function write(name: string, content: string): string {
      const file = path.join(dir, name);
      writeFileSync(file, content);
      return file;
    }

    function configError(env: Record<string, string>): ConfigError {
      try {
        loadHarnessConfig({ ...TOKENS, ...env });
      } catch (error) {
        if (error instanceof ConfigError) return error;
        throw error;
      }
      throw new Error('expected loadHarnessConfig to throw a ConfigError');
    }

    describe('LLM_SCRIPT', () => {
      const SCENARIO = { rounds: [{ content: 'hi' }] };

      it('is the bundled scenario when unset', () => {
        expect(loadHarnessConfig({ ...TOKENS, LLM_SCRIPT: ' ' }).llm.scenario).toEqual(defaultScenario());
      });

      it('is read as inline JSON when it starts with {, else as a file', () => {
        expect(loadHarnessConfig({ ...TOKENS, LLM_SCRIPT: JSON.stringify(SCENARIO) }).llm.scenario).toEqual(SCENARIO);
        expect(loadHarnessConfig({ ...TOKENS, LLM_SCRIPT: write('s.json', JSON.stringify(SCENARIO)) }).llm.scenario).toEqual(SCENARIO);
      });

      it('is not read when the server talks to a real provider, so a stale value cannot stop it', () => {
        const config = loadHarnessConfig({ ...TOKENS, LLM_BASE_URL: 'http://127.0.0.1:1/v1', LLM_SCRIPT: path.join(dir, 'absent.json') });
        expect(config.llm.scenario).toEqual(defaultScenario());
      });

      describe('when it cannot be used', () => {
        it('names a missing file, where it was looked for, and what the value may be', () => {
          const missing = path.join(dir, 'absent.json');
          expect(configError({ LLM_SCRIPT: missing }).message).toBe(
            `LLM_SCRIPT: cannot read ${missing}: no such file (LLM_SCRIPT is a scenario file's path, or inline JSON starting with '{')`,
          );
          expect(configError({ LLM_SCRIPT: 'no-such-scenario.json' }).message).toMatch(
            `LLM_SCRIPT: cannot read no-such-scenario.json (${path.resolve('no-such-scenario.json')}): no such file`,
          );
        });

        it('names a directory', () => {
          expect(configError({ LLM_SCRIPT: dir }).message).toMatch(`LLM_SCRIPT: cannot read ${dir}: it is a directory`);
        });

        it('says that inline JSON is not valid JSON, on one line', () => {
          const error = configError({ LLM_SCRIPT: '{"rounds":\n[' });
          expect(error.variable).toBe('LLM_SCRIPT');
          expect(error.message).toMatch(/^LLM_SCRIPT: not valid JSON \(.+\)$/);
          expect(error.message).not.toContain('\n');
        });

        it('names the file that is not valid JSON', () => {
          const file = write('bad.json', '{"rounds": [');
          expect(configError({ LLM_SCRIPT: file }).message).toMatch(new RegExp(`^LLM_SCRIPT: ${escape(file)}: not valid JSON \\(.+\\)$`));
        });

        it.each([
          [{ rounds: {} }, 'rounds: expected an array'],
          [{ rounds: [], script: [] }, 'script: unknown field (expected "rounds" and "scripts")'],
          [{ rounds: [{ toolCalls: [{ name: 7 }] }] }, 'rounds[0].toolCalls[0].name: expected a non-empty string'],
        ])('names the field of a scenario of the wrong shape (%j), inline or in a file', (scenario, problem) => {
          expect(configError({ LLM_SCRIPT: JSON.stringify(scenario) }).message).toBe(`LLM_SCRIPT: ${problem}`);
          const file = write('shape.json', JSON.stringify(scenario));
          expect(configError({ LLM_SCRIPT: file }).message).toBe(`LLM_SCRIPT: ${file}: ${problem}`);
        });

        it('says what the whole file should be', () => {
          const file = write('list.json', '[]');
          expect(configError({ LLM_SCRIPT: file }).message).toBe(`LLM_SCRIPT: ${file}: expected an object with a "rounds" array`);
        });
      });
    });

    describe('HARNESS_DB and HARNESS_WORKSPACE_ROOT', () => {
      it('accept paths still to be created, an empty file, a SQLite file and :memory:', () => {
        const sqlite = write('harness.db', 'SQLite format 3\0' + '\0'.repeat(84));
        for (const db of [path.join(dir, 'a', 'b', 'harness.db'), write('empty.db', ''), sqlite, ':memory:']) {
          expect(loadHarnessConfig({ ...TOKENS, HARNESS_DB: db }).dbPath).toBe(db);
        }
        expect(loadHarnessConfig({ ...TOKENS, HARNESS_WORKSPACE_ROOT: path.join(dir, 'ws', 'deeper') }).workspaceRoot).toBe(path.join(dir, 'ws', 'deeper'));
      });

      it('refuses a database path that is a directory, another kind of file, or below a file', () => {
        const text = write('notes.txt', 'not a database');
        expect(configError({ HARNESS_DB: dir }).message).toBe(
          `HARNESS_DB: ${dir} is a directory; expected a SQLite database file, or a path where one can be created`,
        );
        expect(configError({ HARNESS_DB: text }).message).toBe(`HARNESS_DB: ${text} is not a SQLite database`);
        expect(configError({ HARNESS_DB: path.join(text, 'sub', 'harness.db') }).message).toBe(
          `HARNESS_DB: cannot create ${path.join(text, 'sub', 'harness.db')}: ${text} is not a directory`,
        );
      });

      it('refuses a workspace root that is a file, or below one', () => {
        const text = write('notes.txt', 'x');
        expect(configError({ HARNESS_WORKSPACE_ROOT: text }).message).toBe(`HARNESS_WORKSPACE_ROOT: ${text} is not a directory`);
        expect(configError({ HARNESS_WORKSPACE_ROOT: path.join(text, 'ws') }).message).toBe(
          `HARNESS_WORKSPACE_ROOT: cannot create ${path.join(text, 'ws')}: ${text} is not a directory`,
        );
      });
    });

    describe('HARNESS_MCP_CONFIG', () => {
      it('lists no server when unset', () => {
        expect(loadHarnessConfig({ ...TOKENS, HARNESS_MCP_CONFIG: '' }).mcpServers).toEqual([]);
      });

      it('reads the servers of the file', () => {
        const file = write('mcp.json', JSON.stringify({ servers: [{ id: 1, name: 'web', type: 'http', url: 'http://127.0.0.1:9000/mcp' }] }));
        expect(loadHarnessConfig({ ...TOKENS, HARNESS_MCP_CONFIG: file }).mcpServers).toEqual([
          { id: 1, name: 'web', type: 'http', url: 'http://127.0.0.1:9000/mcp' },
        ]);
      });

      it('accepts mcp.example.json, the bundled demo server run from the repository root', () => {
        const example = path.resolve(__dirname, '../../mcp.example.json');
        expect(loadHarnessConfig({ ...TOKENS, HARNESS_MCP_CONFIG: example }).mcpServers).toEqual([
          { id: 1, name: 'demo', type: 'stdio', command: 'node', args: ['build/dev/demo/mcp-demo-server.js'], env: {} },
        ]);
      });

      describe('when it cannot be used', () => {
        it('names a missing file and where it was looked for', () => {
          expect(configError({ HARNESS_MCP_CONFIG: './no-such-mcp.json' }).message).toBe(
            `HARNESS_MCP_CONFIG: cannot read ./no-such-mcp.json (${path.resolve('no-such-mcp.json')}): no such file`,
          );
        });

        it('names the file that is not valid JSON', () => {
          const file = write('mcp.json', '{"servers": [');
          expect(configError({ HARNESS_MCP_CONFIG: file }).message).toMatch(new RegExp(`^HARNESS_MCP_CONFIG: ${escape(file)}: not valid JSON \\(.+\\)$`));
        });

        it.each([
          [[], "expected a JSON object with a 'servers' array, got array"],
          [{ server: [] }, 'servers: expected an array, got undefined'],
          [
            { servers: [{ id: 1, name: 'a', type: 'http', url: 'http://127.0.0.1:1/mcp' }, { id: 2, name: 'b', type: 'grpc' }] },
            `servers[1].type: expected 'stdio' or 'http', got "grpc"`,
          ],
          [{ servers: [{ id: 1, name: 'a', type: 'stdio', cmd: 'node' }] }, 'servers[0].cmd: not a field of'],
        ])('names the file and the field of %j', (json, problem) => {
          const file = write('mcp.json', JSON.stringify(json));
          const error = configError({ HARNESS_MCP_CONFIG: file });
          expect(error.variable).toBe('HARNESS_MCP_CONFIG');
          expect(error.message.startsWith(`HARNESS_MCP_CONFIG: ${file}: ${problem}`)).toBe(true);
        });
      });
    });
  });

  describe('a ConfigError', () => {
    it('is one line, whatever the value it quotes', () => {
      const error = (() => {
        try {
          loadHarnessConfig({ ...TOKENS, PORT: '80\n80' });
        } catch (caught) {
          return caught as ConfigError;
        }
        throw new Error('expected a ConfigError');
      })();
      expect(error).toBeInstanceOf(ConfigError);
      expect(error.message).toBe("PORT: expected a port number from 0 to 65535, got '80\\n80'");
    });
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
