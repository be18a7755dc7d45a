import { FakeProvider, type AnswerRound, type ProviderRequest } from './fake-provider';

export { Gate, type ProviderFault, type ScriptedToolCall } from './fake-provider';

/** How the fake model answers one `POST /chat/completions` (usage may be in Chat Completions' words). */
export type ScriptedRound = AnswerRound;

/** The part of a Chat Completions request body the tests read. */
export type ChatCompletionsBody = {
  model: string;
  stream?: boolean;
  messages: ProviderMessage[];
  tools?: Array<{ type: string; function: { name: string } }>;
};

export interface ProviderMessage {
  role: string;
  content: string | null;
  tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

/** A request the fake provider received, its body read as Chat Completions. */
export type ReceivedRequest = ProviderRequest<ChatCompletionsBody>;

/**
 * The {@link FakeProvider} over Chat Completions, the protocol most tests speak, with its request
 * bodies typed as such. Every conversation it receives must be one OpenAI itself would take.
 */
export class FakeOpenAiProvider extends FakeProvider<ChatCompletionsBody> {
  static override start(): Promise<FakeOpenAiProvider> {
    return new FakeOpenAiProvider('openai').listen();
  }
}
