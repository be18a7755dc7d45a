import type { ChatMessage, ToolCall } from './chat-request';
import { answerEveryToolCall, MISSING_TOOL_RESULT } from './tool-call-sequence';

function call(id: string, name = 'read_file'): ToolCall {
  return { id, type: 'function', function: { name, arguments: '{}' } };
}
function assistant(...calls: ToolCall[]): ChatMessage {
  return calls.length > 0 ? { role: 'assistant', content: null, tool_calls: calls } : { role: 'assistant', content: 'done' };
}
function tool(id: string, content = `result of ${id}`): ChatMessage {
  return { role: 'tool', tool_call_id: id, content };
}
const user = (content: string): ChatMessage => ({ role: 'user', content });

describe('answerEveryToolCall', () => {
  it('returns a well-formed conversation unchanged', () => {
    const messages = [user('hi'), assistant(call('a'), call('b')), tool('a'), tool('b'), user('bg done'), assistant()];
    expect(answerEveryToolCall(messages)).toEqual(messages);
  });

  it('puts answers in call order when they were stored in the order calls finished', () => {
    const messages = [user('hi'), assistant(call('a'), call('b'), call('c')), tool('c'), tool('a'), tool('b'), assistant()];
    expect(answerEveryToolCall(messages).map((m) => m.tool_call_id ?? m.role)).toEqual(['user', 'assistant', 'a', 'b', 'c', 'assistant']);
  });

  it('answers a call that has no result with an error naming the gap', () => {
    const messages = [user('hi'), assistant(call('a'), call('b', 'shell')), tool('a'), user('next question')];
    const sequenced = answerEveryToolCall(messages);
    expect(sequenced.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'user']);
    expect(sequenced[3]).toEqual({ role: 'tool', tool_call_id: 'b', name: 'shell', content: MISSING_TOOL_RESULT, is_error: true });
    expect(sequenced[4]).toEqual(user('next question'));
  });

  it('drops tool messages that answer no call before them, and second answers to one call', () => {
    const messages = [user('hi'), tool('stray'), assistant(call('a')), tool('a', 'first'), tool('a', 'second'), tool('x'), assistant()];
    expect(answerEveryToolCall(messages)).toEqual([user('hi'), assistant(call('a')), tool('a', 'first'), assistant()]);
  });

  it('does not let an answer reach across the next assistant message', () => {
    const messages = [assistant(call('a')), assistant(call('b')), tool('a'), tool('b')];
    const sequenced = answerEveryToolCall(messages);
    expect(sequenced.map((m) => [m.role, m.tool_call_id, m.content])).toEqual([
      ['assistant', undefined, null],
      ['tool', 'a', MISSING_TOOL_RESULT],
      ['assistant', undefined, null],
      ['tool', 'b', 'result of b'],
    ]);
  });
});
