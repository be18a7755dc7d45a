import type { LlmModelConfig } from '../llm/chat-request';
import { ApprovalPolicy, decideApproval, type ApprovalQuestion, type ApprovalVerdict } from './approval-policy';
import { DangerAssessor } from './danger-assessor';
import { toolFacts, type ToolFacts } from './tool-capabilities';
import type { ToolDescriptor } from './tool-descriptor';

/** The kinds of tool the table distinguishes, as their facts. */
const TOOLS: Record<string, ToolFacts> = {
  readOnly: { mcp: false, trusted: true, readOnly: true, destructive: false, writesFiles: false, runsCommands: false, serverOnly: false },
  writesFiles: { mcp: false, trusted: true, readOnly: false, destructive: true, writesFiles: true, runsCommands: false, serverOnly: false },
  shell: { mcp: false, trusted: true, readOnly: false, destructive: true, writesFiles: false, runsCommands: true, serverOnly: false },
  serverOnly: { mcp: false, trusted: true, readOnly: false, destructive: false, writesFiles: false, runsCommands: false, serverOnly: true },
  undeclared: { mcp: false, trusted: true, readOnly: false, destructive: false, writesFiles: false, runsCommands: false, serverOnly: false },
  destructive: { mcp: false, trusted: true, readOnly: false, destructive: true, writesFiles: false, runsCommands: false, serverOnly: false },
  trustedMcpReadOnly: { mcp: true, trusted: true, readOnly: true, destructive: false, writesFiles: false, runsCommands: false, serverOnly: false },
  trustedMcpAdditive: { mcp: true, trusted: true, readOnly: false, destructive: false, writesFiles: false, runsCommands: false, serverOnly: false },
  trustedMcpDestructive: { mcp: true, trusted: true, readOnly: false, destructive: true, writesFiles: false, runsCommands: false, serverOnly: false },
  untrustedMcp: { mcp: true, trusted: false, readOnly: false, destructive: true, writesFiles: false, runsCommands: false, serverOnly: false },
};

type Expected = 'run' | 'ask' | 'refuse' | 'assess';

/**
 * Every row of the decision table: level × mode × kind of tool → verdict. Columns are the kinds
 * of TOOLS in order.
 */
const KINDS = Object.keys(TOOLS);
const TABLE: Array<[string | null, 'CLOUD' | 'LOCAL', Expected[]]> = [
  //                          readOnly writes   shell     srvOnly undecl.   destr.    mcpRO   mcpAdd  mcpDestr untrusted
  ['READ_ONLY', 'CLOUD', ['run', 'refuse', 'refuse', 'run', 'refuse', 'refuse', 'run', 'refuse', 'refuse', 'refuse']],
  ['READ_ONLY', 'LOCAL', ['run', 'ask', 'ask', 'run', 'ask', 'ask', 'run', 'ask', 'ask', 'ask']],
  ['READ_WRITE', 'CLOUD', ['run', 'run', 'ask', 'run', 'run', 'ask', 'run', 'run', 'ask', 'ask']],
  ['READ_WRITE', 'LOCAL', ['run', 'run', 'ask', 'run', 'run', 'ask', 'run', 'run', 'ask', 'ask']],
  ['SMART', 'CLOUD', ['run', 'run', 'assess', 'run', 'run', 'ask', 'run', 'run', 'ask', 'ask']],
  ['SMART', 'LOCAL', ['run', 'run', 'assess', 'run', 'run', 'ask', 'run', 'run', 'ask', 'ask']],
  ['FULL', 'CLOUD', ['run', 'run', 'run', 'run', 'run', 'run', 'run', 'run', 'run', 'run']],
  ['FULL', 'LOCAL', ['run', 'run', 'run', 'run', 'run', 'run', 'run', 'run', 'run', 'run']],
  // No level: a CLOUD loop outside sessions runs everything; LOCAL reads it as READ_ONLY.
  [null, 'CLOUD', ['run', 'run', 'run', 'run', 'run', 'run', 'run', 'run', 'run', 'run']],
  [null, 'LOCAL', ['run', 'ask', 'ask', 'run', 'ask', 'ask', 'run', 'ask', 'ask', 'ask']],
  // An unknown level string is READ_ONLY.
  ['ROOT', 'CLOUD', ['run', 'refuse', 'refuse', 'run', 'refuse', 'refuse', 'run', 'refuse', 'refuse', 'refuse']],
];

const ROWS = TABLE.flatMap(([level, mode, verdicts]) => KINDS.map((kind, index) => [level, mode, kind, verdicts[index]] as const));

function question(level: string | null, mode: string, facts: ToolFacts, known = true): ApprovalQuestion {
  return { toolName: 'tool_x', executionMode: mode, permissionLevel: level, facts, known };
}

describe('decideApproval', () => {
  it.each(ROWS)('at %s in %s, a %s tool: %s', (level, mode, kind, expected) => {
    const verdict = decideApproval(question(level, mode, TOOLS[kind]));
    expect(verdict.action).toBe(expected);
    if (verdict.action === 'ask' || verdict.action === 'refuse') expect(verdict.reason).toEqual(expect.any(String));
  });

  describe('when a LOCAL call names a tool the server does not know', () => {
    it.each(['READ_ONLY', 'READ_WRITE', 'SMART', null])('asks at %s, whatever the facts say', (level) => {
      expect(decideApproval(question(level, 'LOCAL', TOOLS.readOnly, false))).toEqual({
        action: 'ask',
        reason: "'tool_x' is not a tool this server knows; the desktop would run it unchecked",
      });
    });

    it('runs it at FULL', () => {
      expect(decideApproval(question('FULL', 'LOCAL', TOOLS.untrustedMcp, false))).toEqual({ action: 'run' });
    });
  });

  describe('the reasons it gives', () => {
    it('says, when it refuses at READ_ONLY, what the tool does and how to let it run', () => {
      const verdict = decideApproval({ ...question('READ_ONLY', 'CLOUD', TOOLS.writesFiles), toolName: 'write_file' }) as { reason: string };
      expect(verdict.reason).toBe(
        "'write_file' changes files, and this session is READ_ONLY: only read-only tools run. Raise the session's permission level to let it run.",
      );
    });

    it('keeps the reasons the desktop has always shown in LOCAL mode', () => {
      const reason = (level: string, facts: ToolFacts): string => (decideApproval(question(level, 'LOCAL', facts)) as { reason: string }).reason;
      expect(reason('READ_ONLY', TOOLS.shell)).toBe('Shell commands need approval at READ_ONLY');
      expect(reason('READ_ONLY', TOOLS.writesFiles)).toBe('File changes need approval at READ_ONLY');
      expect(reason('READ_ONLY', TOOLS.untrustedMcp)).toBe('MCP tools need approval at READ_ONLY');
      expect(reason('READ_WRITE', TOOLS.shell)).toBe('Shell commands need approval at READ_WRITE');
      expect(reason('READ_WRITE', TOOLS.untrustedMcp)).toBe('MCP tools need approval at READ_WRITE');
      expect(reason('SMART', TOOLS.untrustedMcp)).toBe('MCP tools are not assessed automatically and need approval');
    });
  });
});

describe('toolFacts', () => {
  const mcp = (annotations: ToolDescriptor['annotations'], trusted: boolean): ToolDescriptor => ({
    name: 'mcp__docs__search',
    source: 'mcp',
    executor: 'mcp-server',
    serverId: 1,
    originalName: 'search',
    annotations,
    trusted,
  });

  it("counts a trusted MCP server's hints", () => {
    expect(toolFacts(mcp({ readOnlyHint: true }, true), 'mcp__docs__search')).toEqual(expect.objectContaining({ mcp: true, trusted: true, readOnly: true }));
    expect(toolFacts(mcp({ destructiveHint: false }, true), 'mcp__docs__search')).toEqual(expect.objectContaining({ readOnly: false, destructive: false }));
    // MCP's default: a tool that is not read-only may destroy.
    expect(toolFacts(mcp({}, true), 'mcp__docs__search')).toEqual(expect.objectContaining({ readOnly: false, destructive: true }));
  });

  it("ignores an untrusted server's hints: not read-only, destructive", () => {
    expect(toolFacts(mcp({ readOnlyHint: true, destructiveHint: false }, false), 'mcp__docs__search')).toEqual(
      expect.objectContaining({ mcp: true, trusted: false, readOnly: false, destructive: true }),
    );
  });

  it('treats a tool with an mcp__ name as an untrusted MCP tool, whatever its descriptor claims', () => {
    const posing: ToolDescriptor = { name: 'mcp__docs__search', source: 'builtin', executor: 'server', annotations: { readOnlyHint: true } };
    expect(toolFacts(posing, 'mcp__docs__search')).toEqual(expect.objectContaining({ mcp: true, trusted: false, readOnly: false }));
  });

  it('never lets a tool named shell pass for read-only', () => {
    const posing: ToolDescriptor = { name: 'shell', source: 'builtin', executor: 'server', annotations: { readOnlyHint: true } };
    expect(toolFacts(posing, 'shell')).toEqual(expect.objectContaining({ runsCommands: true, readOnly: false }));
  });

  it('does not take a tool that declares nothing for read-only', () => {
    expect(toolFacts({ name: 'deploy', source: 'builtin', executor: 'server' }, 'deploy')).toEqual(
      expect.objectContaining({ readOnly: false, destructive: false, writesFiles: false }),
    );
  });

  it('ignores writesFiles and serverOnly claimed by an MCP tool', () => {
    const claims: ToolDescriptor = { ...mcp({ readOnlyHint: false }, true), writesFiles: true, serverOnly: true };
    expect(toolFacts(claims, 'mcp__docs__search')).toEqual(expect.objectContaining({ writesFiles: false, serverOnly: false }));
  });

  describe('for a tool without a descriptor (the marked name-set fallback)', () => {
    it.each([
      ['read_file', { readOnly: true, writesFiles: false, runsCommands: false, mcp: false }],
      ['write_file', { readOnly: false, writesFiles: true, runsCommands: false, mcp: false }],
      ['edit_file', { readOnly: false, writesFiles: true, runsCommands: false, mcp: false }],
      ['shell', { readOnly: false, writesFiles: false, runsCommands: true, mcp: false }],
      ['mcp__demo__echo', { readOnly: false, writesFiles: false, runsCommands: false, mcp: true, trusted: false }],
      ['task_create', { serverOnly: true }],
      ['probe', { readOnly: true }],
    ])('%s', (name, expected) => {
      expect(toolFacts(undefined, name)).toEqual(expect.objectContaining(expected));
    });
  });
});

describe('ApprovalPolicy', () => {
  const MODEL: LlmModelConfig = { protocol: 'scripted', baseUrl: null, apiKey: null, model: 'm' };
  const smartShell = question('SMART', 'CLOUD', TOOLS.shell);
  const assessor = (verdict: string): DangerAssessor => new DangerAssessor({ complete: async () => verdict });

  it('runs a shell command the assessor judges safe', async () => {
    const policy = new ApprovalPolicy(assessor('{"dangerous":false,"reason":"lists files"}'));
    await expect(policy.decide(smartShell, '{"command":"ls"}', MODEL)).resolves.toEqual({ action: 'run' });
  });

  it('asks, with the assessor reason, for one it judges dangerous', async () => {
    const policy = new ApprovalPolicy(assessor('{"dangerous":true,"reason":"deletes the build"}'));
    await expect(policy.decide(smartShell, '{"command":"rm -rf build"}', MODEL)).resolves.toEqual({ action: 'ask', reason: 'deletes the build' });
  });

  it('asks when there is no assessor or no command to assess', async () => {
    await expect(new ApprovalPolicy(null).decide(smartShell, '{"command":"ls"}', MODEL)).resolves.toEqual(expect.objectContaining({ action: 'ask' }));
    const policy = new ApprovalPolicy(assessor('{"dangerous":false,"reason":"x"}'));
    await expect(policy.decide(smartShell, '{"cmd":"ls"}', MODEL)).resolves.toEqual({ action: 'ask', reason: 'The shell command could not be read' });
    await expect(policy.decide(smartShell, 'not json', MODEL)).resolves.toEqual({ action: 'ask', reason: 'The shell command could not be read' });
  });

  it('passes every other verdict through', async () => {
    const policy = new ApprovalPolicy(null);
    const verdicts: ApprovalVerdict[] = await Promise.all([
      policy.decide(question('READ_ONLY', 'CLOUD', TOOLS.writesFiles), '{}', MODEL),
      policy.decide(question('FULL', 'CLOUD', TOOLS.shell), '{}', MODEL),
    ]);
    expect(verdicts.map((verdict) => verdict.action)).toEqual(['refuse', 'run']);
  });
});
