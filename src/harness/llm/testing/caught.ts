/**
 * The error a promise (or an async function) rejects with, typed loosely so a test can inspect
 * its fields. Fails the test if it resolves instead.
 */
export async function caught(work: Promise<unknown> | (() => Promise<unknown>)): Promise<any> {
  try {
    await (typeof work === 'function' ? work() : work);
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection, but it resolved');
}
