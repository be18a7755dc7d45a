import type { EventSocket } from '../api/event-socket';
import type { HarnessApi } from '../api/harness-api';
import type { Activity, Session, StoredMessage, WsEvent } from '../api/wire';
import { EMPTY_CONVERSATION, type Conversation } from './conversation';
import { applyEvent, markInterrupted, startRun, withPrompts } from './conversation-events';
import { fillFromMessages } from './conversation-history';
import { EventSequence } from './event-sequence';

/** Everything the session view shows. */
export interface FeedState {
  session: Session | null;
  conversation: Conversation;
  activities: Activity[];
  /** True until the log has been read once. */
  loading: boolean;
  /** Why the session could not be loaded. */
  problem: string | null;
  /** Problems the server reported about this console's frames, or beside a run; newest last. */
  notices: string[];
  /** Approvals and questions this console answered that the server has not settled yet. */
  answering: ReadonlySet<string>;
  /** The console asked the server to cancel the current run. */
  cancelRequested: boolean;
}

const ACTIVITY_REFRESH_MS = 250;

/**
 * One session's live view. It reads the session's event log over HTTP up to its end, then
 * subscribes on the WebSocket from the last event read; every reconnection does the same from
 * wherever it got to. Events pass through an {@link EventSequence}, so each is applied once and
 * in order, whichever way it came: a reload or a dropped connection loses and doubles nothing.
 * Listeners are told of changes at most once per animation frame.
 */
export class SessionFeed {
  private current: FeedState = {
    session: null,
    conversation: EMPTY_CONVERSATION,
    activities: [],
    loading: true,
    problem: null,
    notices: [],
    answering: new Set(),
    cancelRequested: false,
  };
  private readonly sequence = new EventSequence();
  private readonly listeners = new Set<(state: FeedState) => void>();
  private readonly detach: Array<() => void> = [];
  /** Whether live events are applied (a subscription from `lastSeq` was sent on this socket). */
  private following = false;
  private catchingUp: Promise<void> | null = null;
  private catchUpAgain = false;
  private stopped = false;
  private frame: number | null = null;
  private activityTimer: ReturnType<typeof setTimeout> | null = null;
  /** Runs whose prompt was looked for in the stored messages. */
  private readonly promptsAsked = new Set<string>();
  /** The session and its messages are loaded: catching up may begin. */
  private ready = false;
  /** The stored conversation, for the runs the event log does not hold. */
  private messages: StoredMessage[] = [];

  constructor(
    private readonly api: HarnessApi,
    private readonly socket: EventSocket,
    readonly sessionId: number,
  ) {}

  get state(): FeedState {
    return this.current;
  }

  onChange(listener: (state: FeedState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async start(): Promise<void> {
    this.detach.push(this.socket.onEvent((event) => this.onLiveEvent(event)));
    this.detach.push(
      this.socket.onOpen(() => {
        this.following = false;
        if (this.ready) void this.catchUp();
      }),
    );
    try {
      const [session, messages, activities] = await Promise.all([
        this.api.getSession(this.sessionId),
        this.api.messages(this.sessionId),
        this.api.activities(this.sessionId),
      ]);
      this.messages = messages;
      this.update({ session, activities, conversation: withPrompts(this.current.conversation, messages) });
      this.ready = true;
      await this.catchUp();
    } catch (error) {
      this.update({ problem: messageOf(error), loading: false });
    }
  }

  stop(): void {
    this.stopped = true;
    for (const undo of this.detach.splice(0)) undo();
    if (this.following) this.socket.send({ type: 'unsubscribe', sessionId: this.sessionId });
    this.following = false;
    if (this.frame !== null) cancelAnimationFrame(this.frame);
    if (this.activityTimer !== null) clearTimeout(this.activityTimer);
    this.listeners.clear();
  }

  /** Sends a message: the run shows at once with its prompt; its events follow. */
  async send(content: string): Promise<void> {
    const { executionId } = await this.api.sendMessage(this.sessionId, content);
    this.update({ conversation: startRun(this.current.conversation, executionId, content), cancelRequested: false });
  }

  async cancel(): Promise<void> {
    this.update({ cancelRequested: true });
    try {
      await this.api.cancelRun(this.sessionId);
    } catch (error) {
      this.update({ cancelRequested: false });
      throw error;
    }
  }

  answerApproval(requestId: string, approved: boolean, message: string): boolean {
    const frame = { type: 'approval_response' as const, sessionId: this.sessionId, requestId, approved, ...(message !== '' && { message }) };
    return this.answer(requestId, () => this.socket.send(frame));
  }

  answerQuestions(requestId: string, answers: Record<string, string | string[]>): boolean {
    return this.answer(requestId, () => this.socket.send({ type: 'ask_user_answer', sessionId: this.sessionId, requestId, answers }));
  }

  dismissNotices(): void {
    this.update({ notices: [] });
  }

  private answer(requestId: string, send: () => boolean): boolean {
    if (!send()) {
      this.update({ notices: [...this.current.notices, 'Not connected to the server: the answer was not sent. Try again once the console is live.'] });
      return false;
    }
    this.update({ answering: new Set([...this.current.answering, requestId]) });
    return true;
  }

  /**
   * Reads the log from the last event applied to its end, checks whether a run is still going,
   * and subscribes from there. One at a time: a reconnection during a catch-up runs another after.
   */
  private catchUp(): Promise<void> {
    if (this.catchingUp) {
      this.catchUpAgain = true;
      return this.catchingUp;
    }
    this.catchingUp = (async () => {
      do {
        this.catchUpAgain = false;
        await this.readLog();
      } while (this.catchUpAgain && !this.stopped);
    })()
      .catch((error: unknown) => {
        if (this.current.loading) this.update({ problem: messageOf(error), loading: false });
      })
      .finally(() => (this.catchingUp = null));
    return this.catchingUp;
  }

  private async readLog(): Promise<void> {
    for (let next: number | null = this.sequence.lastSeq; next !== null && !this.stopped; ) {
      const page = await this.api.events(this.sessionId, next);
      const first = page.events[0]?.seq;
      // The log keeps the latest events only: older ones were dropped, start at the first kept.
      if (first !== undefined && first > this.sequence.lastSeq + 1) this.sequence.skipTo(first - 1);
      this.applyAll(page.events.flatMap((event) => this.sequence.push(event)));
      next = page.next;
    }
    if (this.stopped) return;
    const active = await this.api.isRunActive(this.sessionId);
    // Runs with no events are older than the log (or it dropped them): the stored messages tell them.
    const activeRun = active ? (this.current.conversation.runs.at(-1)?.executionId ?? null) : null;
    const conversation = fillFromMessages(this.current.conversation, this.messages, this.current.activities, activeRun);
    if (active) this.update({ conversation });
    else this.update({ conversation: markInterrupted(conversation), cancelRequested: false });
    this.following = this.socket.send({ type: 'subscribe', sessionId: this.sessionId, after: this.sequence.lastSeq });
    this.update({ loading: false });
  }

  private onLiveEvent(event: WsEvent): void {
    if (this.stopped || event.sessionId !== this.sessionId) return;
    if (event.seq === undefined) {
      // A reply to one of our frames (a refused answer, say): it settles nothing we sent.
      if (event.type === 'error') this.update({ notices: [...this.current.notices, String(event.data.message)], answering: new Set() });
      return;
    }
    if (this.following) this.applyAll(this.sequence.push(event));
  }

  private applyAll(events: WsEvent[]): void {
    if (events.length === 0) return;
    let { conversation, answering, cancelRequested } = this.current;
    let notices = this.current.notices;
    for (const event of events) {
      conversation = applyEvent(conversation, event);
      if (event.type === 'activity') this.refreshActivitiesSoon();
      if (event.type === 'approval_resolved' || event.type === 'ask_user_questions_cancelled') answering = without(answering, event.data.requestId);
      if (event.type === 'message_end' || (event.type === 'error' && event.data.final === true)) cancelRequested = false;
      if (event.type === 'error' && typeof event.data.executionId !== 'string') notices = [...notices, String(event.data.message)];
    }
    const unknown = conversation.runs.filter((run) => run.prompt === null && !this.promptsAsked.has(run.executionId));
    if (unknown.length > 0) this.fetchPrompts(unknown.map((run) => run.executionId));
    this.update({ conversation, answering, cancelRequested, notices });
  }

  /** A run this console did not start (another tab, another client): its prompt is in the messages. */
  private fetchPrompts(executionIds: string[]): void {
    for (const executionId of executionIds) this.promptsAsked.add(executionId);
    this.api
      .messages(this.sessionId)
      .then((messages) => {
        this.messages = messages;
        this.update({ conversation: withPrompts(this.current.conversation, messages) });
      })
      .catch(() => undefined);
  }

  private refreshActivitiesSoon(): void {
    if (this.activityTimer !== null) return;
    this.activityTimer = setTimeout(() => {
      this.activityTimer = null;
      this.api
        .activities(this.sessionId)
        .then((activities) => this.update({ activities }))
        .catch(() => undefined);
    }, ACTIVITY_REFRESH_MS);
  }

  private update(change: Partial<FeedState>): void {
    if (this.stopped) return;
    this.current = { ...this.current, ...change };
    if (this.frame !== null) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = null;
      for (const listener of [...this.listeners]) listener(this.current);
    });
  }
}

function without(set: ReadonlySet<string>, value: unknown): ReadonlySet<string> {
  if (typeof value !== 'string' || !set.has(value)) return set;
  const next = new Set(set);
  next.delete(value);
  return next;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
