/**
 * Effective listening ports: the configured port plus `server.offset` (spec 000, [server]: "added to every
 * runtime port, e.g. base 9443 with offset 1 gives 9444"; default ports from spec 002, part 4).
 *
 * A configured port of 0 stays 0: it asks the operating system for any free port (tests use it), and an
 * offset on top would turn it into a fixed, probably privileged, port.
 */
import type { Segment } from './locate';
import { get } from './schema-index';

export interface EffectivePorts {
  /** server.offset as configured. */
  readonly offset: number;
  /** Management HTTPS: transport.https.properties.port (9443). */
  readonly managementHttps: number;
  /** Management HTTP: transport.http.properties.port (9763). */
  readonly managementHttp: number;
  /** Gateway HTTP pass-through: transport.passthru_http.listener.parameters.port (8280). */
  readonly passthruHttp: number;
  /** Gateway HTTPS pass-through: transport.passthru_https.listener.parameters.port (8243). */
  readonly passthruHttps: number;
  /** Gateway WebSocket: transport.ws.port (9099). */
  readonly ws: number;
  /** Gateway secure WebSocket: transport.wss.port (8099). */
  readonly wss: number;
  /** Built-in demo backend: throughway.demo.port (9000). */
  readonly demo: number;
  /** Mediation debugger command port: mediation.engine.command_debugger_port (9005; accepted, not opened). */
  readonly commandDebugger: number;
  /** Mediation debugger event port: mediation.engine.event_debugger_port (9006; accepted, not opened). */
  readonly eventDebugger: number;
  /** Throttle event synchronisation: apim.throttling.event_sync.port (11224; accepted, not opened). */
  readonly eventSync: number;
  /** Throttle event management: apim.throttling.event_management.port (10005; accepted, not opened). */
  readonly eventManagement: number;
}

export type PortName = Exclude<keyof EffectivePorts, 'offset'>;

export interface PortSpec {
  readonly name: PortName;
  /** Full dotted key of the configured port. */
  readonly key: string;
  /** The spec's default, used when the key holds no number (e.g. a runtime `${...}` token). */
  readonly base: number;
  readonly title: string;
  /** Full dotted key of the switch that opens this listener; absent = always open; null = never opened. */
  readonly openedBy?: string | null;
}

/** Every listening port the schema knows, in the order `config check` prints them. */
export const LISTENING_PORTS: readonly PortSpec[] = [
  {
    name: 'passthruHttp',
    key: 'transport.passthru_http.listener.parameters.port',
    base: 8280,
    title: 'gateway HTTP',
    openedBy: 'transport.passthru_http.listener.enable',
  },
  {
    name: 'passthruHttps',
    key: 'transport.passthru_https.listener.parameters.port',
    base: 8243,
    title: 'gateway HTTPS',
    openedBy: 'transport.passthru_https.listener.enable',
  },
  { name: 'ws', key: 'transport.ws.port', base: 9099, title: 'gateway WS', openedBy: 'transport.ws.sender.enable' },
  { name: 'wss', key: 'transport.wss.port', base: 8099, title: 'gateway WSS', openedBy: 'transport.wss.sender.enable' },
  { name: 'managementHttps', key: 'transport.https.properties.port', base: 9443, title: 'management HTTPS' },
  { name: 'managementHttp', key: 'transport.http.properties.port', base: 9763, title: 'management HTTP' },
  { name: 'demo', key: 'throughway.demo.port', base: 9000, title: 'demo backend', openedBy: 'throughway.demo.enable' },
  {
    name: 'commandDebugger',
    key: 'mediation.engine.command_debugger_port',
    base: 9005,
    title: 'mediation debugger (command)',
    openedBy: null,
  },
  { name: 'eventDebugger', key: 'mediation.engine.event_debugger_port', base: 9006, title: 'mediation debugger (event)', openedBy: null },
  { name: 'eventSync', key: 'apim.throttling.event_sync.port', base: 11224, title: 'throttle event sync', openedBy: null },
  {
    name: 'eventManagement',
    key: 'apim.throttling.event_management.port',
    base: 10005,
    title: 'throttle event management',
    openedBy: null,
  },
];

export type PortProblem = (segments: Segment[], message: string, expected: string, code: 'CONFIG_RANGE' | 'CONFIG_PORT_CONFLICT') => void;

/** Whether a listener is opened by this configuration (its switch, when it has one, is true). */
export function portOpened(config: unknown, spec: PortSpec): boolean {
  if (spec.openedBy === null) return false;
  if (spec.openedBy === undefined) return true;
  return get(config, spec.openedBy.split('.')) === true;
}

/**
 * The effective ports of a loaded (converted) configuration. Problems go to `problem`: an effective port
 * above 65535 names server.offset (the key to change), and two opened listeners on one port are a
 * conflict that would fail at start with EADDRINUSE.
 */
export function effectivePorts(config: unknown, problem: PortProblem): EffectivePorts {
  const rawOffset = get(config, ['server', 'offset']);
  const offset = typeof rawOffset === 'number' && Number.isInteger(rawOffset) ? rawOffset : 0;
  const out: Record<string, number> = { offset };
  const opened = new Map<number, PortSpec>();
  const outside: string[] = [];
  let low = Number.NEGATIVE_INFINITY;
  let high = Number.POSITIVE_INFINITY;
  for (const spec of LISTENING_PORTS) {
    const configured = get(config, spec.key.split('.'));
    const base = typeof configured === 'number' && Number.isInteger(configured) ? configured : spec.base;
    const effective = base === 0 ? 0 : base + offset;
    // Ports throughway never opens do not limit the offset: they are reported, not bound.
    if (base !== 0 && spec.openedBy !== null) {
      low = Math.max(low, 1 - base);
      high = Math.min(high, 65535 - base);
      if (effective > 65535 || effective < 0) outside.push(`${spec.title} ${base} + ${offset} = ${effective}`);
    }
    out[spec.name] = effective;
    if (effective !== 0 && effective <= 65535 && portOpened(config, spec)) {
      const other = opened.get(effective);
      if (other !== undefined) {
        problem(
          spec.key.split('.'),
          `${spec.title} and ${other.title} both listen on port ${effective}`,
          `a port other than ${effective} (used by ${other.key})`,
          'CONFIG_PORT_CONFLICT',
        );
      } else opened.set(effective, spec);
    }
  }
  if (outside.length > 0) {
    // One diagnostic on server.offset, the key to change, listing every port it pushes out of range.
    problem(
      ['server', 'offset'],
      `server.offset ${offset} puts ${outside.length === 1 ? 'a port' : `${outside.length} ports`} outside 0..65535: ${outside.join(', ')}`,
      `an offset from ${low} to ${high}`,
      'CONFIG_RANGE',
    );
  }
  return Object.freeze(out) as unknown as EffectivePorts;
}
