import type { ToolCall, ToolCallDelta } from '../llm/chat-request';

/** Where the accumulator announces calls as they become known. */
export interface ToolCallAccumulatorEvents {
  /** Once per call id, as soon as its id and name are complete. */
  onStart(toolCallId: string, toolName: string, argumentsSoFar: string): void;
  /** An argument fragment of a call already announced. */
  onArgumentsDelta(toolCallId: string, fragment: string): void;
}

interface PendingCall {
  id: string;
  name: string;
  arguments: string;
  started: boolean;
}

/**
 * Puts streamed tool-call fragments back together. Fragments are joined by `index`, and by `id`
 * as well, because some providers stream every call at index 0 and tell them apart only by id.
 * A call's name is complete once its arguments begin or another call's fragments arrive, so the
 * call is announced then (never on a partial name) and each id is announced exactly once.
 */
export class ToolCallAccumulator {
  private readonly calls: PendingCall[] = [];
  private readonly byIndex = new Map<number, PendingCall>();
  private readonly byId = new Map<string, PendingCall>();
  /** The call the last fragment belonged to. */
  private previous: PendingCall | undefined;

  constructor(private readonly events: ToolCallAccumulatorEvents) {}

  add(delta: ToolCallDelta): void {
    const id = delta.id || undefined;
    const call = this.callFor(delta.index, id);
    if (id !== undefined && call.id === '') {
      call.id = id;
      this.byId.set(id, call);
    }
    // A call's name is complete once another call's fragment arrives. Only the call of the
    // previous fragment can have become announceable since then — every other one was started,
    // or still lacks the id or name only its own fragments can bring — so this stays O(1) per
    // fragment however many calls the round has (it used to walk them all: quadratic).
    if (this.previous !== undefined && this.previous !== call) this.startIfKnown(this.previous);
    this.previous = call;
    // Once announced the name is final: a provider that repeats the name must not extend it.
    const nameFragment = delta.function?.name;
    if (nameFragment && !call.started) call.name += nameFragment;

    const fragment = delta.function?.arguments;
    if (!fragment) return;
    this.startIfKnown(call);
    call.arguments += fragment;
    if (call.started) this.events.onArgumentsDelta(call.id, fragment);
  }

  /**
   * The calls of the stream in the order they began. Announces any call not yet announced;
   * a call the provider gave no id gets one from `generateId` (its position in the list).
   */
  finish(generateId: (position: number) => string): ToolCall[] {
    const calls = this.calls.filter((call) => call.id !== '' || call.name !== '' || call.arguments !== '');
    calls.forEach((call, position) => {
      if (call.id === '') call.id = generateId(position);
      this.startIfKnown(call, true);
    });
    return calls.map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: call.arguments },
    }));
  }

  private callFor(index: number, id: string | undefined): PendingCall {
    const known = id === undefined ? undefined : this.byId.get(id);
    if (known) {
      this.byIndex.set(index, known);
      return known;
    }
    const current = this.byIndex.get(index);
    if (current && (id === undefined || current.id === '')) return current;
    const call: PendingCall = { id: '', name: '', arguments: '', started: false };
    this.calls.push(call);
    this.byIndex.set(index, call);
    return call;
  }

  private startIfKnown(call: PendingCall, evenWithoutName = false): void {
    if (call.started || call.id === '' || (call.name === '' && !evenWithoutName)) return;
    call.started = true;
    this.events.onStart(call.id, call.name, call.arguments);
  }
}
