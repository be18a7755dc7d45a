import { Module, type DynamicModule } from '@nestjs/common';
import type { Tool } from '../harness/tool/tool';
import type { HarnessConfig } from './harness-config';

/** Token of the server's configuration (`HarnessConfig`). */
export const HARNESS_CONFIG = Symbol('HarnessConfig');
/** Token of what an embedding product adds to the server (`HarnessExtensions`). */
export const HARNESS_EXTENSIONS = Symbol('HarnessExtensions');

/** What an embedding product adds to the server. */
export interface HarnessExtensions {
  /** Tools registered beside the built-in ones (names must not clash with them). */
  tools?: Tool[];
}

/**
 * The configuration and the embedding extensions, as providers every module can inject (the
 * module is global): `HARNESS_CONFIG` and `HARNESS_EXTENSIONS`.
 */
@Module({})
export class HarnessConfigModule {
  static forRoot(config: HarnessConfig, extensions: HarnessExtensions = {}): DynamicModule {
    return {
      module: HarnessConfigModule,
      global: true,
      providers: [
        { provide: HARNESS_CONFIG, useValue: config },
        { provide: HARNESS_EXTENSIONS, useValue: extensions },
      ],
      exports: [HARNESS_CONFIG, HARNESS_EXTENSIONS],
    };
  }
}
