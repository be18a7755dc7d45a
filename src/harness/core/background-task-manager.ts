// The frozen legacy specs (design §5) import the manager from here; it lives in the runtime leaf.
export { BackgroundTaskManager, type BackgroundTaskResult } from '../runtime/background-task-manager';
