import 'reflect-metadata';
import * as path from 'node:path';
import type { NestApplicationOptions } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { WsAdapter } from '@nestjs/platform-ws';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module';
import { loadHarnessConfig, type HarnessConfig } from './config/harness-config';
import { ConfigError } from './config/config-error';
import { checkListenAddress } from './config/listen-address';
import { HarnessDatabase } from './session/persistence/harness-database';
import type { Tool } from './harness/tool/tool';
import { serveConsole } from './session/http/console-assets';
import { useJsonBody } from './session/http/json-body';
import { serveOpenApiDocument } from './session/http/openapi';
import { createValidationPipe } from './session/http/validation';
import { parseClientFrame } from './session/gateway/client-frame';
import { errorMessage } from './harness/runtime/error-message';
import { startTraceExport, type TraceExport } from './trace-export';

/** A running server and the address it listens on. */
export interface RunningHarness {
  app: NestExpressApplication;
  url: string;
  port: number;
  close(): Promise<void>;
}

export interface StartHarnessOptions {
  /** `false` silences the Nest logger (tests, the demo). */
  logger?: false;
  /**
   * Tools of the embedding product, registered beside the built-in ones: they get the same
   * dispatch, approvals, audit and streaming.
   */
  tools?: Tool[];
  /** Where the built web console is (default {@link DEFAULT_CONSOLE_DIR}). */
  consoleDir?: string;
}

/** The web console `npm run build` writes beside the server: `dist/console`. */
export const DEFAULT_CONSOLE_DIR = path.join(__dirname, 'console');

/**
 * Creation options every Harness application needs (`NestFactory.create`, or a testing module's
 * `createNestApplication`): Nest's own body parsers are off, `configureHarnessApp` installs ours.
 */
export function harnessAppOptions(options: Pick<StartHarnessOptions, 'logger'> = {}): NestApplicationOptions {
  return { logger: options.logger === false ? false : ['warn', 'error'], bodyParser: false };
}

/**
 * What the server needs between creating the application and listening: the JSON body limits,
 * the web console's files at `/`, the WebSocket adapter with its frame parser, the validation
 * pipe, the OpenAPI document (`GET /api/openapi.json`). The application must have been created
 * with `harnessAppOptions`.
 */
export function configureHarnessApp(app: NestExpressApplication, options: Pick<StartHarnessOptions, 'consoleDir'> = {}): NestExpressApplication {
  useJsonBody(app);
  serveConsole(app, options.consoleDir ?? DEFAULT_CONSOLE_DIR);
  app.useWebSocketAdapter(new WsAdapter(app, { messageParser: parseClientFrame }));
  app.useGlobalPipes(createValidationPipe());
  serveOpenApiDocument(app);
  return app;
}

/**
 * Initializes the application (its lifecycle's start: directories, run recovery, the shell
 * probe) and listens on `port` (0: a free one) at `host`.
 */
export async function listenHarness(app: NestExpressApplication, { host, port }: Pick<HarnessConfig, 'host' | 'port'>): Promise<RunningHarness> {
  await app.listen(port, host);
  const address = app.getHttpServer().address();
  const boundPort = typeof address === 'object' && address ? address.port : port;
  const url = `http://${host}:${boundPort}`;
  return { app, url, port: boundPort, close: () => app.close() };
}

/** Starts the server for a configuration (used by `main`, the demo and the whole-process tests). */
export async function startHarness(config: HarnessConfig, options: StartHarnessOptions = {}): Promise<RunningHarness> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config, { tools: options.tools ?? [] }), harnessAppOptions(options));
  return listenHarness(configureHarnessApp(app, options), config);
}

async function main(): Promise<void> {
  // Every variable, the scenario and the MCP config file are read and checked here, before Nest
  // starts: a bad value is one ConfigError line, not a stack trace from a provider's factory.
  const config = loadHarnessConfig();
  await checkListenAddress(config);
  checkDatabase(config);
  // Before Nest starts, so that the first run's spans have somewhere to go.
  const traces = startTraceExport();
  const harness = await startHarness(config);
  closeOnSignals(harness, traces);
  // Plain lines on stdout that scripts and people can wait for (the Nest logger shows only warnings).
  if (config.generatedToken) {
    console.log(`no HARNESS_TOKENS given; token for user 1: ${config.generatedToken}`);
  }
  if (traces) console.log(`harness sending traces to ${traces.endpoint}`);
  console.log(`harness listening on ${harness.url}`);
}

/**
 * Opens the database file once as the server will (schema checked and brought up to date) and
 * closes it: a file with a SQLite header but damaged behind it, or written by a newer schema, is
 * one `HARNESS_DB` line, not a stack trace from inside Nest.
 */
function checkDatabase(config: HarnessConfig): void {
  if (config.dbPath === ':memory:') return;
  try {
    new HarnessDatabase(config.dbPath, { walCheckpoints: 'inline' }).close();
  } catch (error) {
    throw new ConfigError('HARNESS_DB', `${config.dbPath} cannot be used: ${errorMessage(error)}`);
  }
}

/**
 * How long a graceful stop may take in all before the process exits anyway: runs get 5 s to end,
 * sockets 2 s to flush, then MCP servers and the database close. A tool that ignores cancellation
 * or a peer that never reads must not keep a deploy waiting.
 */
const SHUTDOWN_DEADLINE_MS = 10_000;

/**
 * SIGTERM and SIGINT close the server (runs, WebSocket clients, MCP server processes, database),
 * send the spans still buffered for export, and exit with 0. Nest's own shutdown hooks would
 * re-raise the signal after closing, so the process would die of it (exit status 143) instead of
 * exiting cleanly. A second signal exits at once.
 */
function closeOnSignals(harness: RunningHarness, traces: TraceExport | null): void {
  let closing = false;
  const onSignal = (): void => {
    if (closing) process.exit(1);
    closing = true;
    setTimeout(() => {
      console.error(`shutdown took longer than ${SHUTDOWN_DEADLINE_MS} ms; exiting without waiting further`);
      process.exit(0);
    }, SHUTDOWN_DEADLINE_MS).unref();
    harness
      .close()
      // The runs' last spans end while the server closes, so they are sent after it (waiting for
      // the collector 2 s at most).
      .then(() => traces?.shutdown().catch((error: unknown) => console.error(`sending the last traces failed: ${errorMessage(error)}`)))
      .then(
        () => process.exit(0),
        (error: unknown) => {
          console.error(`shutdown failed: ${errorMessage(error)}`);
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    // One line, no stack: a ConfigError's message already names the variable and the problem.
    console.error(`harness: ${errorMessage(error)}`);
    process.exit(1);
  });
}
