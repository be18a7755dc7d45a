import { DEFAULT_SCENARIO_MARKERS, defaultScenario } from '../harness/llm/scripted-default-scenario';

/** First messages that pick the demo's scripts in the bundled scenario. */
export const DEMO_CLOUD = `${DEFAULT_SCENARIO_MARKERS.cloud} Take notes, read them back, and try the MCP server.`;
export const DEMO_RESTRICTED = `${DEFAULT_SCENARIO_MARKERS.restricted} Write a file, although this session may only read.`;
export const DEMO_LOCAL = `${DEFAULT_SCENARIO_MARKERS.local} Inspect the project on my desktop.`;
export const DEMO_CONTENT = `${DEFAULT_SCENARIO_MARKERS.content} Take a screenshot and dump the big log.`;

/** The scenario `npm run demo` runs: the bundled one of `LLM_PROTOCOL=scripted`. */
export const demoScenario = defaultScenario;
