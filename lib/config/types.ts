/**
 * The typed result of loading deployment.toml, in one import: the generated configuration interfaces
 * (lib/config/deployment-config.generated.ts, from the schema), the effective ports, the load result and
 * its diagnostics. Modules receive these frozen objects; none parses TOML or reads the environment.
 */
export * from './deployment-config.generated';
export type { EffectivePorts, PortName } from './ports';
export type { LoadOptions, LoadResult, WrittenKey } from './load';
export type { KeyStatus, StatusCounts } from './key-status';
export type { Diagnostic, DiagnosticCode, DiagnosticLevel } from './diagnostics';
