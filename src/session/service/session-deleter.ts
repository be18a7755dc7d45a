import type { BackgroundTaskManager } from '../../harness/runtime/background-task-manager';
import { errorMessage } from '../../harness/runtime/error-message';
import type { SessionRepository } from '../persistence/session-repository';
import { SessionBusyError } from './session-errors';
import type { SessionService } from './session-service';
import type { SessionToolProvider } from './session-tool-provider';
import { removeSessionWorkspace, type WorkspaceRemoval } from './session-workspace';

/** Whether a session has a run going (the run service; a port, as runs sit above this layer). */
export interface ActiveRuns {
  isActive(sessionId: number): boolean;
}

export interface SessionDeleterDeps {
  sessions: SessionService;
  repository: SessionRepository;
  runs: ActiveRuns;
  backgroundTasks: Pick<BackgroundTaskManager, 'runningCount' | 'forgetSession'>;
  sessionTools: Pick<SessionToolProvider, 'close'>;
  workspaceRoot: string;
  /** Where the clean-up that cannot fail the request reports; defaults to the console. */
  logger?: { warn(message: string): void };
}

/** What became of the deleted session's workspace folder. */
export type WorkspaceDeletion = WorkspaceRemoval | { outcome: 'shared' } | { outcome: 'failed'; reason: string };

/**
 * Deletes a session for its owner: its stored history (messages, activities, attachments, runs,
 * tasks), its MCP clients and, unless another session of the user uses the same workspace name,
 * its workspace folder on the server.
 */
export class SessionDeleter {
  private readonly logger: { warn(message: string): void };

  constructor(private readonly deps: SessionDeleterDeps) {
    this.logger = deps.logger ?? console;
  }

  /**
   * @throws SessionNotFoundError when the user owns no such session.
   * @throws SessionBusyError while a run or a background command of the session is going: both
   *   write to its history and workspace. Nothing is deleted then.
   */
  async delete(sessionId: number, userId: number): Promise<WorkspaceDeletion> {
    const { deps } = this;
    const session = deps.sessions.getOwned(sessionId, userId);
    if (deps.runs.isActive(sessionId)) throw new SessionBusyError(sessionId, 'a run is active');
    const background = deps.backgroundTasks.runningCount(sessionId);
    if (background > 0) throw new SessionBusyError(sessionId, `${background} background command(s) still run`);
    // From the checks to the workspace's move out of the way nothing yields, so no run, no
    // session with the same workspace name and no request for this one can start in between.
    deps.repository.delete(sessionId);
    deps.backgroundTasks.forgetSession(sessionId);
    const workspace: Promise<WorkspaceDeletion> = deps.repository.isWorkspaceInUse(session.userId, session.workspace)
      ? Promise.resolve({ outcome: 'shared' })
      : this.removeWorkspace(session);
    const [removal] = await Promise.all([
      workspace,
      deps.sessionTools.close(sessionId).catch((error: unknown) => this.logger.warn(`session ${sessionId}: closing its MCP clients failed: ${errorMessage(error)}`)),
    ]);
    if (removal.outcome === 'refused' || removal.outcome === 'failed') {
      this.logger.warn(`session ${sessionId}: its workspace folder was not removed: ${removal.reason}`);
    }
    return removal;
  }

  /** Starts the removal at once (its checks and move run in this tick); never rejects. */
  private removeWorkspace(session: { userId: number; workspace: string }): Promise<WorkspaceDeletion> {
    return removeSessionWorkspace(this.deps.workspaceRoot, session).catch((error: unknown): WorkspaceDeletion => ({ outcome: 'failed', reason: errorMessage(error) }));
  }
}
