import { ChildProcess } from "node:child_process";
import { GeneratedControls, CONTROL_TABLE } from "./controls.generated";

export * from "./controls.generated";
export { CONTROL_TABLE };

export declare const BOOTSTRAP_ENV: "KAFKA_BOOTSTRAP";
export declare const CONTROLS_URL_ENV: "KAFKALITE_CONTROLS_URL";
export declare const COMMAND_ENV: "KAFKALITE_CMD";

export interface StartOptions {
  /** broker settings by Kafka's names: { "num.partitions": 3 } */
  config?: Record<string, string | number | boolean>;
  /** node ids in one process, each on its own port */
  nodes?: number;
  /** a seed file: topics, records, offsets, ACLs, users, loaded before the broker is ready */
  seed?: string;
  /** "manual": time stands still until advanceClock */
  clock?: "system" | "manual";
  console?: boolean;
  schemaRegistry?: boolean;
  /** an SSL listener with a throwaway CA (broker.ca) beside PLAINTEXT */
  tls?: boolean;
  /** any other option of the kafkalite command */
  args?: string[];
  /** how long to wait for the ready line (default 60000) */
  timeoutMs?: number;
}

export declare class ControlError extends Error {
  control: string;
  status: number;
  text: string;
}

export declare class Controls extends GeneratedControls {
  constructor(url: string);
  url: string;
  call(name: string, args?: Record<string, unknown>): Promise<unknown>;
  list(): Promise<Array<{ name: string; parameters: Record<string, unknown>; doc: string }>>;
}

export declare class Broker {
  child: ChildProcess;
  bootstrap: string;
  listeners: Record<string, string>;
  nodes: Record<number, string>;
  controlsUrl: string;
  consoleUrl?: string;
  registryUrl?: string;
  ca?: string;
  logPath: string;
  controls: Controls;
  reset(): Promise<unknown>;
  snapshot(name: string): Promise<unknown>;
  restore(name: string): Promise<unknown>;
  advanceClock(ms: number): Promise<unknown>;
  stop(): Promise<void>;
}

export declare function startKafkalite(options?: StartOptions): Promise<Broker>;
export declare function controlsFromEnv(): Controls;
export declare function findCommand(): string[];
export declare function parseReadyLine(line: string): Record<string, unknown> | null;
