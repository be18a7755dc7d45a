import { CancelledRuns } from './cancelled-runs';

describe('CancelledRuns', () => {
  it('remembers why a run was cancelled, and knows nothing of the others', () => {
    const runs = new CancelledRuns();
    runs.add('run-1', 'the run was cancelled');
    expect(runs.reasonFor('run-1')).toBe('the run was cancelled');
    expect(runs.reasonFor('run-2')).toBeUndefined();
  });

  it('forgets the oldest run past its capacity, counting a run cancelled again as the newest', () => {
    const runs = new CancelledRuns(2);
    runs.add('run-1', 'first');
    runs.add('run-2', 'second');
    runs.add('run-1', 'again');
    runs.add('run-3', 'third');
    expect(runs.reasonFor('run-2')).toBeUndefined();
    expect(runs.reasonFor('run-1')).toBe('again');
    expect(runs.reasonFor('run-3')).toBe('third');
  });
});
