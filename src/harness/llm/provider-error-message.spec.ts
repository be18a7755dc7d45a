import { describeProviderError, extractProviderMessage } from './provider-error-message';

describe('extractProviderMessage', () => {
  it.each([
    ['{"error":{"message":"Invalid API key","type":"auth"}}', 'Invalid API key'],
    ['{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}', 'invalid x-api-key'],
    ['{"message":"model not found"}', 'model not found'],
    ['{"error":"plain error string"}', 'plain error string'],
    ['upstream connect error', 'upstream connect error'],
    ['   ', null],
  ])('reads %p', (body, expected) => {
    expect(extractProviderMessage(body)).toBe(expected);
  });
});

describe('describeProviderError', () => {
  it.each([
    [{ type: 'overloaded_error', message: 'Overloaded' }, 'overloaded_error — Overloaded'],
    [{ code: 'server_error', message: 'The model failed' }, 'server_error — The model failed'],
    [{ message: 'just a message' }, 'just a message'],
    ['a plain string', 'a plain string'],
    [{ unexpected: true }, '{"unexpected":true}'],
  ])('describes %j as %p', (error, expected) => {
    expect(describeProviderError(error)).toBe(expected);
  });
});
