import type { LlmModelConfig } from '../llm/chat-request';
import type { DangerAssessor } from './danger-assessor';
import { parsePermissionLevel, type PermissionLevel } from './permission-level';
import type { ToolFacts } from './tool-capabilities';
import { parseToolArguments } from './tool-arguments';

/**
 * The one approval policy: whether a call runs, waits for a person, or is refused — for CLOUD
 * and LOCAL sessions alike. `decideApproval` is the decision table (pure); `ApprovalPolicy`
 * settles its one open row, a shell command at `SMART`, with the danger assessor.
 */

/** What the policy is asked about one call. */
export interface ApprovalQuestion {
  toolName: string;
  /** `CLOUD` or `LOCAL` (anything else is taken for CLOUD). */
  executionMode: string | null;
  /**
   * The session's level as it is now. `null`: the caller manages no levels (a CLOUD loop run
   * outside any session); in LOCAL mode a missing level is `READ_ONLY`, as it always was.
   */
  permissionLevel: string | null;
  facts: ToolFacts;
  /** LOCAL: the server knows a tool of this name (a built-in, registered or session tool). */
  known: boolean;
}

/** What becomes of the call. */
export type ApprovalVerdict =
  | { action: 'run' }
  /** A person approves or denies first (CLOUD: the owner's clients; LOCAL: the desktop). */
  | { action: 'ask'; reason: string }
  /** Not at this level: the model gets an error result saying why. */
  | { action: 'refuse'; reason: string }
  /** A shell command at SMART: the danger assessor decides between run and ask. */
  | { action: 'assess' };

const RUN = { action: 'run' } as const;

/**
 * The decision table. Rows, in order:
 *
 * | # | when | verdict |
 * |---|------|---------|
 * | 1 | LOCAL, a name the server does not know, below FULL | ask |
 * | 2 | CLOUD, no level at all | run |
 * | 3 | a server-only tool (the session's todo list) | run |
 * | 4 | FULL | run |
 * | 5 | a read-only tool | run |
 * | 6 | READ_ONLY, CLOUD | refuse |
 * | 7 | READ_ONLY, LOCAL | ask (the desktop asks; LOCAL has always asked here) |
 * | 8 | READ_WRITE / SMART, runs commands | ask / assess |
 * | 9 | READ_WRITE / SMART, writes files of the workspace | run |
 * | 10 | READ_WRITE / SMART, an MCP tool of an untrusted server | ask |
 * | 11 | READ_WRITE / SMART, a destructive tool | ask |
 * | 12 | READ_WRITE / SMART, anything else | run |
 *
 * An unknown level string is READ_ONLY.
 */
export function decideApproval(question: ApprovalQuestion): ApprovalVerdict {
  const { toolName, facts } = question;
  const local = question.executionMode === 'LOCAL';
  if (!local && question.permissionLevel == null) return RUN;
  const level = parsePermissionLevel(question.permissionLevel);
  if (local && !question.known && level !== 'FULL') {
    return { action: 'ask', reason: `'${toolName}' is not a tool this server knows; the desktop would run it unchecked` };
  }
  if (facts.serverOnly || level === 'FULL' || facts.readOnly) return RUN;
  if (level === 'READ_ONLY') {
    const what = describeEffect(facts);
    return local
      ? { action: 'ask', reason: `${capitalize(what.plural)} need approval at READ_ONLY` }
      : {
          action: 'refuse',
          reason: `'${toolName}' ${what.singular}, and this session is READ_ONLY: only read-only tools run. ` +
            'Raise the session\'s permission level to let it run.',
        };
  }
  return decideWriting(level, facts);
}

/** Rows 8–12: READ_WRITE and SMART. */
function decideWriting(level: Exclude<PermissionLevel, 'FULL' | 'READ_ONLY'>, facts: ToolFacts): ApprovalVerdict {
  if (facts.runsCommands) return level === 'SMART' ? { action: 'assess' } : { action: 'ask', reason: 'Shell commands need approval at READ_WRITE' };
  if (facts.writesFiles) return RUN;
  if (facts.mcp && !facts.trusted) {
    return level === 'SMART'
      ? { action: 'ask', reason: 'MCP tools are not assessed automatically and need approval' }
      : { action: 'ask', reason: `MCP tools need approval at ${level}` };
  }
  if (facts.destructive) return { action: 'ask', reason: `The tool is declared destructive and needs approval at ${level}` };
  return RUN;
}

/** Why a tool is not read-only, for the messages of rows 6 and 7. */
function describeEffect(facts: ToolFacts): { singular: string; plural: string } {
  if (facts.runsCommands) return { singular: 'runs shell commands', plural: 'shell commands' };
  if (facts.writesFiles) return { singular: 'changes files', plural: 'file changes' };
  if (facts.mcp) {
    return facts.trusted
      ? { singular: 'is an MCP tool its server does not declare read-only', plural: 'MCP tools' }
      : { singular: 'is a tool of an MCP server that is not trusted', plural: 'MCP tools' };
  }
  return { singular: 'is not declared read-only', plural: 'tools not declared read-only' };
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** A verdict with the assessment done: run, ask or refuse. */
export type SettledApproval = Exclude<ApprovalVerdict, { action: 'assess' }>;

/** The policy with its assessor: every verdict settled. */
export class ApprovalPolicy {
  constructor(private readonly assessor: DangerAssessor | null) {}

  /**
   * The verdict when it needs no assessment (every case but a shell command at SMART), else
   * `undefined`: then `decide` assesses. Lets the common case skip a wait.
   */
  settled(question: ApprovalQuestion): SettledApproval | undefined {
    const verdict = decideApproval(question);
    return verdict.action === 'assess' ? undefined : verdict;
  }

  async decide(question: ApprovalQuestion, argumentsJson: string, modelConfig: LlmModelConfig | null): Promise<SettledApproval> {
    const verdict = this.settled(question);
    if (verdict !== undefined) return verdict;
    const command = readShellCommand(argumentsJson);
    if (command === null) return { action: 'ask', reason: 'The shell command could not be read' };
    if (!this.assessor) return { action: 'ask', reason: 'No assessor is configured for shell commands' };
    const assessment = await this.assessor.assess(command, modelConfig);
    return assessment.dangerous ? { action: 'ask', reason: assessment.reason } : RUN;
  }
}

/** The `command` argument of a shell call, or `null` when the arguments do not hold one. */
export function readShellCommand(argumentsJson: string): string | null {
  const parsed = parseToolArguments(argumentsJson);
  const command = parsed.ok && Object.prototype.hasOwnProperty.call(parsed.args, 'command') ? parsed.args.command : undefined;
  return typeof command === 'string' ? command : null;
}
