import { createLlmModelConfigFromEnv } from '../harness/llm/llm-adapter-facade';
import { DEFAULT_LLM_LIMITS } from '../harness/llm/llm-limits';
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
      expect(llm).toEqual({ ...createLlmModelConfigFromEnv(env), script: null, ...DEFAULT_LLM_LIMITS });
      expect(llm).toEqual({
        protocol: 'responses',
        baseUrl: 'http://x/v1',
        apiKey: 'k',
        model: 'gpt-4o-mini',
        script: null,
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
});
